#!/usr/bin/env bash
# Run the pitwatch batch (`pitwatch run`) on an Apache Spark cluster (Beam's
# portable SparkRunner), with the Python workers in an SDK container image that
# has pitwatch installed, onto a lake on an object store (s3://, gs://) or a
# shared mount.
#
# Untested against a real Spark cluster (written on a machine without one).
# What was tested here: tests/test_deploy_scripts.py checks the argument
# handling and the commands this prints with --dry-run; the same pipeline runs
# in CI through Beam's portable Job API, the protocol the SparkRunner speaks,
# with a local job service and an EXTERNAL worker pool
# (tests/pipelines/test_portable_runner.py; docs/scale-out.md, "The rehearsal").
#
# Steps:
#   1. build the wheel:  python3 -m pip wheel REPO --no-deps -w REPO/dist
#   2. build the image:  docker build -f deploy/Dockerfile --target pitwatch[-store] ... -t IMAGE REPO
#      (then push IMAGE where the Spark workers can pull it: the script only reminds you)
#   3. submit the job:   [env AWS_...] pitwatch run INPUT --lake LAKE --runner=SparkRunner ...
#
# Requirements and caveats:
#   * LAKE: s3://BUCKET/PATH, gs://BUCKET/PATH, or a shared mount's absolute
#     path (the same on every machine); INPUT likewise (or HDFS).
#   * The store reaches the workers through their image, as in deploy/flink.sh:
#     Beam's Docker environment starts each SDK container with no variables of
#     its own; --store-endpoint URL [--store-region R] for an S3-compatible store
#     (MinIO, Ceph); credentials from the workers' machine identity, never built
#     into the image.
#   * The Spark workers need Docker (--environment_type=DOCKER starts one SDK
#     container per worker).
#   * Beam's Spark runner downloads a job server jar from Maven Central and runs
#     it here, which needs Java on this machine (or pass -- --spark_submit_uber_jar
#     --spark_rest_url=http://spark-master:6066 to submit through the master's REST
#     API instead).  Beam 2.77's jar is built for Spark 3.
#   * Options after `--` go to `pitwatch run` (and through it to Beam), after
#     the ones this script sets; for a Beam option given twice the last wins.
#   * PYTHON (default python3) is the interpreter that builds the wheel.
set -euo pipefail

PROG=deploy/${0##*/}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USAGE="usage: $PROG [--dry-run] INPUT LAKE --spark-master spark://HOST:PORT --image REGISTRY/pitwatch:VER [--store-endpoint URL [--store-region R]] [-- extra pitwatch/Beam options...]"

# shellcheck source=deploy/lib.sh
source "$REPO/deploy/lib.sh"

show_help() {
    cat <<EOF
$USAGE

Build the pitwatch wheel and an SDK container image with it installed
(deploy/Dockerfile), then run \`pitwatch run INPUT --lake LAKE\` on Spark with
the Python workers in that image.

  INPUT                  event files, folder or glob, reachable from every Spark worker
  LAKE                   s3://BUCKET/PATH, gs://BUCKET/PATH or a shared mount's absolute path
  --spark-master URL     the Spark master (spark://HOST:PORT, e.g. spark://spark-master:7077)
  --image NAME:TAG       image to build; push it where the Spark workers can pull it
  --store-endpoint URL   an S3-compatible store's endpoint (MinIO, Ceph), built into the
                         image and given to pitwatch run here (not for AWS S3 itself)
  --store-region R       its region (default us-east-1)
  --dry-run              print the commands (prefixed with '+ ') and run nothing
  -h, --help             this help
  -- ...                 further options for pitwatch run / Beam (e.g. --spark_submit_uber_jar)

Example:
  $PROG s3://casino-feeds/2026-11-28/ s3://casino-lake/lake \\
      --spark-master spark://spark-master:7077 --image registry.example.com/pitwatch:0.1.0 \\
      --store-endpoint https://minio.casino.internal:9000 -- --fail-on critical
EOF
}

dry_run=0
spark_master=''
positional=()
extra=()

while (($#)); do
    take_cluster_option "$@"
    if ((taken)); then shift "$taken"; continue; fi
    case $1 in
        -h | --help) show_help; exit 0 ;;
        --dry-run) dry_run=1 ;;
        --spark-master)
            (($# >= 2)) || usage_error "$1 needs a value"
            spark_master=$2
            shift ;;
        --spark-master=*) spark_master=${1#*=} ;;
        --) shift; extra=("$@"); break ;;
        -*) usage_error "unknown option $1 (options for pitwatch or Beam go after --)" ;;
        *) positional+=("$1") ;;
    esac
    shift
done

take_input_and_lake ${positional[@]+"${positional[@]}"}
check_cluster_lake
[[ -n $spark_master ]] || usage_error "missing --spark-master"
[[ $spark_master =~ ^spark://[^[:space:]/:]+:[0-9]+/?$ ]] \
    || usage_error "--spark-master must be spark://HOST:PORT, got '$spark_master'"
check_cluster_options

find_wheel

require_tools pitwatch docker

build_wheel
build_image "Spark workers"
run ${store_env[@]+"${store_env[@]}"} pitwatch run "$input" --lake "$lake" \
    --runner=SparkRunner \
    "--spark_master_url=$spark_master" \
    --environment_type=DOCKER \
    "--environment_options=docker_container_image=$image" \
    "--sdk_container_image=$image" \
    ${extra[@]+"${extra[@]}"}
