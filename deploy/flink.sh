#!/usr/bin/env bash
# Run the pitwatch batch (`pitwatch run`) on an Apache Flink cluster, with the
# Python workers in an SDK container image that has pitwatch installed, onto a
# lake on an object store (s3://, gs://) or a shared mount.
#
# Untested against a real Flink cluster (written on a machine without one).
# What was tested here: tests/test_deploy_scripts.py checks the argument
# handling and the commands this prints with --dry-run; the same pipeline runs
# in CI through Beam's portable Job API, the protocol Flink speaks, with a local
# job service and an EXTERNAL worker pool (tests/pipelines/test_portable_runner.py;
# docs/scale-out.md, "The rehearsal").
#
# Steps:
#   1. build the wheel:  python3 -m pip wheel REPO --no-deps -w REPO/dist
#   2. build the image:  docker build -f deploy/Dockerfile --target pitwatch[-store] ... -t IMAGE REPO
#      (then push IMAGE where the task managers can pull it: the script only
#      reminds you; the task managers' Docker daemons pull it when the job starts)
#   3. submit the job:   [env AWS_...] pitwatch run INPUT --lake LAKE --runner=FlinkRunner ...
#
# Requirements and caveats:
#   * LAKE: s3://BUCKET/PATH, gs://BUCKET/PATH, or a shared mount's absolute
#     path (the same on every machine); INPUT likewise (or HDFS).
#   * The store reaches the workers through their image, not through this
#     machine's variables: Beam's Docker environment starts each SDK container
#     with no variables of its own (host networking and, for GCS, the gcloud
#     credentials mounted).  AWS S3 or GCS: nothing to give (the workers'
#     credentials come from their machine's identity).  An S3-compatible store
#     (MinIO, Ceph): --store-endpoint URL [--store-region R] builds its endpoint
#     and region into the image (target pitwatch-store) and starts pitwatch run
#     here with the same variables; credentials are never built into the image.
#   * The task managers need Docker (--environment_type=DOCKER starts one SDK
#     container per worker).
#   * Beam's Flink runner downloads a job server jar from Maven Central and
#     runs it here, which needs Java on this machine (or pass
#     -- --flink_submit_uber_jar to upload it to the cluster instead).  The jar
#     must match the cluster's Flink version: Beam 2.77 defaults to Flink 2.2;
#     for another cluster pass e.g. -- --flink_version=1.20.
#   * The image reaches the workers through --environment_options=docker_container_image=IMAGE:
#     that is what Beam 2.77's portable runners (Flink, Spark) read for a DOCKER
#     environment.  --sdk_container_image=IMAGE, Dataflow's name for it, is passed
#     too but on its own the FlinkRunner ignores it and silently runs the stock
#     apache/beam_python3.11_sdk image, which has no pitwatch.
#   * Options after `--` go to `pitwatch run` (and through it to Beam), after
#     the ones this script sets; for a Beam option given twice the last wins.
#   * PYTHON (default python3) is the interpreter that builds the wheel.
set -euo pipefail

PROG=deploy/${0##*/}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USAGE="usage: $PROG [--dry-run] INPUT LAKE --flink-master HOST:PORT --image REGISTRY/pitwatch:VER [--parallelism N] [--store-endpoint URL [--store-region R]] [-- extra pitwatch/Beam options...]"

# shellcheck source=deploy/lib.sh
source "$REPO/deploy/lib.sh"

show_help() {
    cat <<EOF
$USAGE

Build the pitwatch wheel and an SDK container image with it installed
(deploy/Dockerfile), then run \`pitwatch run INPUT --lake LAKE\` on Flink with
the Python workers in that image.

  INPUT                  event files, folder or glob, reachable from every task manager
  LAKE                   s3://BUCKET/PATH, gs://BUCKET/PATH or a shared mount's absolute path
  --flink-master H:P     Flink JobManager REST address (e.g. flink-jobmanager:8081)
  --image NAME:TAG       image to build; push it where the task managers can pull it
  --parallelism N        Flink parallelism (default: the cluster's)
  --store-endpoint URL   an S3-compatible store's endpoint (MinIO, Ceph), built into the
                         image and given to pitwatch run here (not for AWS S3 itself)
  --store-region R       its region (default us-east-1)
  --dry-run              print the commands (prefixed with '+ ') and run nothing
  -h, --help             this help
  -- ...                 further options for pitwatch run / Beam (e.g. --flink_version=1.20)

Example:
  $PROG s3://casino-feeds/2026-11-28/ s3://casino-lake/lake \\
      --flink-master flink-jobmanager:8081 --image registry.example.com/pitwatch:0.1.0 \\
      --parallelism 8 --store-endpoint https://minio.casino.internal:9000 -- --fail-on critical
EOF
}

dry_run=0
flink_master='' parallelism=''
positional=()
extra=()

while (($#)); do
    take_cluster_option "$@"
    if ((taken)); then shift "$taken"; continue; fi
    case $1 in
        -h | --help) show_help; exit 0 ;;
        --dry-run) dry_run=1 ;;
        --flink-master | --parallelism)
            (($# >= 2)) || usage_error "$1 needs a value"
            case $1 in
                --flink-master) flink_master=$2 ;;
                --parallelism) parallelism=$2 ;;
            esac
            shift ;;
        --flink-master=*) flink_master=${1#*=} ;;
        --parallelism=*) parallelism=${1#*=} ;;
        --) shift; extra=("$@"); break ;;
        -*) usage_error "unknown option $1 (options for pitwatch or Beam go after --)" ;;
        *) positional+=("$1") ;;
    esac
    shift
done

take_input_and_lake ${positional[@]+"${positional[@]}"}
check_cluster_lake
[[ -n $flink_master ]] || usage_error "missing --flink-master"
[[ $flink_master =~ ^(https?://)?[^[:space:]/:]+:[0-9]+/?$ ]] \
    || usage_error "--flink-master must be HOST:PORT, got '$flink_master'"
[[ -z $parallelism || $parallelism =~ ^[1-9][0-9]*$ ]] \
    || usage_error "--parallelism must be a positive integer, got '$parallelism'"
check_cluster_options

find_wheel

require_tools pitwatch docker

build_wheel
build_image "Flink task managers"
parallelism_opt=()
[[ -z $parallelism ]] || parallelism_opt=("--parallelism=$parallelism")
run ${store_env[@]+"${store_env[@]}"} pitwatch run "$input" --lake "$lake" \
    --runner=FlinkRunner \
    "--flink_master=$flink_master" \
    --environment_type=DOCKER \
    "--environment_options=docker_container_image=$image" \
    "--sdk_container_image=$image" \
    ${parallelism_opt[@]+"${parallelism_opt[@]}"} \
    ${extra[@]+"${extra[@]}"}
