#!/usr/bin/env bash
# Run the pitwatch batch (`pitwatch run`) on an Apache Flink cluster, with the
# Python workers in an SDK container image that has pitwatch installed.
#
# Untested against a real Flink cluster (written on a machine without one);
# tests/test_deploy_scripts.py checks only the argument handling and the
# commands it prints with --dry-run.
#
# Steps:
#   1. build the wheel:  python3 -m pip wheel REPO --no-deps -w REPO/dist
#   2. build the image:  docker build -f deploy/Dockerfile --build-arg PITWATCH_VERSION=VERSION -t IMAGE REPO
#      (then push IMAGE where the task managers can pull it: the script only
#      reminds you; the task managers' Docker daemons pull it when the job starts)
#   3. submit the job:   pitwatch run INPUT --lake LAKE --runner=FlinkRunner ...
#
# Requirements and caveats:
#   * INPUT and LAKE must be reachable under the same path from every task
#     manager: a shared mount, HDFS, S3 or GCS -- not this machine's disk.
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
#   * Spark works alike: --runner=SparkRunner --spark_master_url=spark://HOST:7077
#     instead of the FlinkRunner options (edit the last command below).
#   * Options after `--` go to `pitwatch run` (and through it to Beam), after
#     the ones this script sets; for a Beam option given twice the last wins.
#   * PYTHON (default python3) is the interpreter that builds the wheel.
set -euo pipefail

PROG=deploy/${0##*/}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USAGE="usage: $PROG [--dry-run] INPUT LAKE --flink-master HOST:PORT --image REGISTRY/pitwatch:VER [--parallelism N] [-- extra pitwatch/Beam options...]"

# shellcheck source=deploy/lib.sh
source "$REPO/deploy/lib.sh"

show_help() {
    cat <<EOF
$USAGE

Build the pitwatch wheel and an SDK container image with it installed
(deploy/Dockerfile), then run \`pitwatch run INPUT --lake LAKE\` on Flink with
the Python workers in that image.

  INPUT                  event files, folder or glob, reachable from every task manager
  LAKE                   lake folder, reachable from every task manager
  --flink-master H:P     Flink JobManager REST address (e.g. flink-jobmanager:8081)
  --image NAME:TAG       image to build; push it where the task managers can pull it
  --parallelism N        Flink parallelism (default: the cluster's)
  --dry-run              print the commands (prefixed with '+ ') and run nothing
  -h, --help             this help
  -- ...                 further options for pitwatch run / Beam (e.g. --flink_version=1.20)

Example:
  $PROG /mnt/feeds/2026-11-28/ /mnt/lake \\
      --flink-master flink-jobmanager:8081 --image registry.example.com/pitwatch:0.1.0 \\
      --parallelism 8 -- --fail-on critical
EOF
}

dry_run=0
flink_master='' image='' parallelism=''
positional=()
extra=()

while (($#)); do
    case $1 in
        -h | --help) show_help; exit 0 ;;
        --dry-run) dry_run=1 ;;
        --flink-master | --image | --parallelism)
            (($# >= 2)) || usage_error "$1 needs a value"
            case $1 in
                --flink-master) flink_master=$2 ;;
                --image) image=$2 ;;
                --parallelism) parallelism=$2 ;;
            esac
            shift ;;
        --flink-master=*) flink_master=${1#*=} ;;
        --image=*) image=${1#*=} ;;
        --parallelism=*) parallelism=${1#*=} ;;
        --) shift; extra=("$@"); break ;;
        -*) usage_error "unknown option $1 (options for pitwatch or Beam go after --)" ;;
        *) positional+=("$1") ;;
    esac
    shift
done

take_input_and_lake ${positional[@]+"${positional[@]}"}
[[ -n $flink_master ]] || usage_error "missing --flink-master"
[[ $flink_master =~ ^(https?://)?[^[:space:]/:]+:[0-9]+/?$ ]] \
    || usage_error "--flink-master must be HOST:PORT, got '$flink_master'"
[[ -n $image ]] || usage_error "missing --image"
[[ $image != *[[:space:]]* ]] || usage_error "--image must not contain spaces, got '$image'"
[[ -z $parallelism || $parallelism =~ ^[1-9][0-9]*$ ]] \
    || usage_error "--parallelism must be a positive integer, got '$parallelism'"

find_wheel

require_tools pitwatch docker

build_wheel
run docker build -f "$REPO/deploy/Dockerfile" --build-arg "PITWATCH_VERSION=$version" -t "$image" "$REPO"
echo "Reminder: push $image where the Flink task managers can pull it (docker push $image);" \
     "the job below starts at once and fails on workers that cannot pull it." >&2
parallelism_opt=()
[[ -z $parallelism ]] || parallelism_opt=("--parallelism=$parallelism")
run pitwatch run "$input" --lake "$lake" \
    --runner=FlinkRunner \
    "--flink_master=$flink_master" \
    --environment_type=DOCKER \
    "--environment_options=docker_container_image=$image" \
    "--sdk_container_image=$image" \
    ${parallelism_opt[@]+"${parallelism_opt[@]}"} \
    ${extra[@]+"${extra[@]}"}
