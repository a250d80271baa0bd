#!/usr/bin/env bash
# Run the pitwatch batch (`pitwatch run`) on Google Cloud Dataflow.
#
# Untested against real Dataflow (written on a machine without GCP access).
# What was tested here: tests/test_deploy_scripts.py checks the argument
# handling and the commands it prints with --dry-run; the lake on an object
# store was tested against the S3 API only (a local moto server), never
# against GCS: a gs:// lake goes through the same code (pyarrow.fs, delta-rs,
# the lock's lease object created only if absent, which GCS supports too), but
# only a run on GCS shows it works there (docs/scale-out.md, "What was tested").
#
# Steps:
#   1. build the wheel:  python3 -m pip wheel REPO --no-deps -w REPO/dist
#   2. submit the job:   pitwatch run INPUT --lake LAKE --runner=DataflowRunner ...
#                        --extra_package=REPO/dist/pitwatch-VERSION-py3-none-any.whl
#
# Requirements and caveats:
#   * The machine launching the job needs pitwatch and Beam's GCP extras:
#       pip install 'apache-beam[gcp]==2.77.*'   (plus pitwatch itself)
#     and Google Cloud credentials (gcloud auth application-default login).
#   * LAKE must be a gs:// path (exit 2 otherwise): Dataflow workers cannot see
#     this machine's disks, mount no shared file system, and have no S3
#     credentials.  The run's lock on it is a lease object (docs/lake.md,
#     "Supported stores"), held by this machine for the run's length.  INPUT
#     should be gs:// too (the script warns of any other).
#   * The store needs no variables on the workers: they reach GCS with the
#     job's service account; this machine with its application-default
#     credentials.
#   * Workers install the wheel's dependencies (pyarrow, duckdb, pokerkit, ...)
#     from PyPI when they start.  To avoid that (no internet on the workers,
#     faster start-up), build deploy/Dockerfile, push it to Artifact Registry
#     and pass  -- --sdk_container_image=REGION-docker.pkg.dev/P/REPO/pitwatch:VERSION
#   * Options after `--` go to `pitwatch run` (and through it to Beam), after
#     the ones this script sets; for a Beam option given twice the last wins,
#     so e.g. `-- --job_name=nightly-2026-11-28` overrides the generated name.
#   * PYTHON (default python3) is the interpreter that builds the wheel.
set -euo pipefail

PROG=deploy/${0##*/}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USAGE="usage: $PROG [--dry-run] INPUT LAKE --project P --region R --temp gs://BUCKET/tmp [-- extra pitwatch/Beam options...]"

# shellcheck source=deploy/lib.sh
source "$REPO/deploy/lib.sh"

show_help() {
    cat <<EOF
$USAGE

Build the pitwatch wheel, then run \`pitwatch run INPUT --lake LAKE\` on Google
Cloud Dataflow, staging the wheel for the workers (--extra_package).

  INPUT          event files, folder or glob (gs://...)
  LAKE           lake folder (gs://BUCKET/PATH)
  --project P    Google Cloud project
  --region R     Dataflow region (e.g. europe-west1)
  --temp URI     gs:// folder for temporary files; staging goes to URI/staging
  --dry-run      print the commands (prefixed with '+ ') and run nothing
  -h, --help     this help
  -- ...         further options for pitwatch run / Beam (e.g. --max_num_workers=10)

Example:
  $PROG gs://casino-feeds/2026-11-28/ gs://casino-lake \\
      --project casino-audit --region europe-west1 --temp gs://casino-tmp/beam \\
      -- --max_num_workers=8 --fail-on critical
EOF
}

dry_run=0
project='' region='' temp=''
positional=()
extra=()

while (($#)); do
    case $1 in
        -h | --help) show_help; exit 0 ;;
        --dry-run) dry_run=1 ;;
        --project | --region | --temp)
            (($# >= 2)) || usage_error "$1 needs a value"
            case $1 in
                --project) project=$2 ;;
                --region) region=$2 ;;
                --temp) temp=$2 ;;
            esac
            shift ;;
        --project=*) project=${1#*=} ;;
        --region=*) region=${1#*=} ;;
        --temp=*) temp=${1#*=} ;;
        --) shift; extra=("$@"); break ;;
        -*) usage_error "unknown option $1 (options for pitwatch or Beam go after --)" ;;
        *) positional+=("$1") ;;
    esac
    shift
done

take_input_and_lake ${positional[@]+"${positional[@]}"}
[[ -n $project ]] || usage_error "missing --project"
[[ -n $region ]] || usage_error "missing --region"
[[ -n $temp ]] || usage_error "missing --temp"
[[ $temp == gs://?* ]] || usage_error "--temp must be a gs:// URI, got '$temp'"
temp=${temp%/}

[[ $lake == gs://?* ]] || usage_error "LAKE must be a gs:// path (Dataflow workers write it), got '$lake'"
[[ $input == gs://* ]] || echo "Warning: '$input' is not a gs:// path; Dataflow workers cannot read local files" >&2

find_wheel
job_name=pitwatch-$(date -u +%Y%m%d-%H%M%S)

require_tools pitwatch

build_wheel
run pitwatch run "$input" --lake "$lake" \
    --runner=DataflowRunner \
    "--project=$project" \
    "--region=$region" \
    "--temp_location=$temp" \
    "--staging_location=$temp/staging" \
    "--extra_package=$wheel" \
    "--job_name=$job_name" \
    ${extra[@]+"${extra[@]}"}
