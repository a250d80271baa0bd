# Shared by deploy/dataflow.sh, deploy/flink.sh and deploy/spark.sh (sourced, not run).
# Expects REPO, USAGE and dry_run to be set by the script that sources it.

usage_error() {
    printf 'Error: %s\n%s\n' "$1" "$USAGE" >&2
    exit 2
}

# INPUT and LAKE from the positional arguments: exactly two.
take_input_and_lake() {
    (($# >= 1)) || usage_error "missing INPUT and LAKE"
    (($# >= 2)) || usage_error "missing LAKE"
    (($# <= 2)) || usage_error "unexpected argument '$3' (more inputs go after --)"
    input=$1
    lake=$2
}

# A lake a cluster's workers write: on an object store (s3://BUCKET/..., gs://BUCKET/...; the lake's
# lock is then a lease object, docs/lake.md "Supported stores") or on a shared mount, given by its
# absolute path (the same on every machine).  A relative path or another scheme is refused.
check_cluster_lake() {
    case $lake in
        s3://?* | gs://?*) ;;
        /*) ;;
        *://*) usage_error "LAKE must be on s3://, gs:// or a shared mount, got '$lake'" ;;
        *) usage_error "LAKE must be s3://..., gs://... or a shared mount's absolute path, got '$lake' (a relative path is another folder on every machine)" ;;
    esac
}

# The options flink.sh and spark.sh share: the workers' image and an S3-compatible store's endpoint.
# Called with the option and the rest of the arguments; sets `taken` to the number of words it used
# (0: not one of these).
image=''
store_endpoint='' store_region=''
take_cluster_option() {
    taken=0
    case $1 in
        --image | --store-endpoint | --store-region)
            (($# >= 2)) || usage_error "$1 needs a value"
            case $1 in
                --image) image=$2 ;;
                --store-endpoint) store_endpoint=$2 ;;
                --store-region) store_region=$2 ;;
            esac
            taken=2 ;;
        --image=*) image=${1#*=}; taken=1 ;;
        --store-endpoint=*) store_endpoint=${1#*=}; taken=1 ;;
        --store-region=*) store_region=${1#*=}; taken=1 ;;
    esac
}

# Check the shared options once parsed; store_env: what `pitwatch run` is started with here so that
# this machine (the run's commits, its lease) and the workers (their image) reach the same store.
check_cluster_options() {
    [[ -n $image ]] || usage_error "missing --image"
    [[ $image != *[[:space:]]* ]] || usage_error "--image must not contain spaces, got '$image'"
    store_env=()
    if [[ -z $store_endpoint ]]; then
        [[ -z $store_region ]] || usage_error "--store-region goes with --store-endpoint"
        return 0
    fi
    [[ $store_endpoint =~ ^https?://[^[:space:]/]+/?$ ]] \
        || usage_error "--store-endpoint must be http(s)://HOST[:PORT], got '$store_endpoint'"
    [[ $lake == s3://* || $input == s3://* ]] \
        || usage_error "--store-endpoint is for an s3:// LAKE or INPUT (an S3-compatible store)"
    store_region=${store_region:-us-east-1}
    [[ $store_region =~ ^[A-Za-z0-9-]+$ ]] || usage_error "--store-region must be a region name, got '$store_region'"
    allow_http=false
    [[ $store_endpoint != http://* ]] || allow_http=true
    store_env=(env "AWS_ENDPOINT_URL=$store_endpoint" "AWS_REGION=$store_region" "AWS_ALLOW_HTTP=$allow_http")
}

# version (from pyproject.toml) and the path of the wheel the build makes.
find_wheel() {
    version=$(sed -n 's/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$REPO/pyproject.toml" | head -n 1)
    if [[ -z $version ]]; then
        echo "Error: no version = \"...\" line in $REPO/pyproject.toml" >&2
        exit 1
    fi
    wheel=$REPO/dist/pitwatch-$version-py3-none-any.whl
}

# Print a command ('+ ' and shell-quoted words: stdout on --dry-run, else stderr), then run it unless --dry-run.
run() {
    local line
    printf -v line '%q ' "$@"
    if ((dry_run)); then
        printf '+ %s\n' "${line% }"
    else
        printf '+ %s\n' "${line% }" >&2
        "$@"
    fi
}

# Fail early when a tool the real run needs is missing (nothing is needed for --dry-run).
require_tools() {
    ((dry_run)) && return 0
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "Error: $tool is not on PATH (install it, or activate pitwatch's virtual environment)" >&2; exit 1; }
    done
}

# The wheel (pure Python, py3-none-any): it installs on any worker's Python >= 3.11, whatever
# machine built it.
build_wheel() {
    run "${PYTHON:-python3}" -m pip wheel "$REPO" --no-deps -w "$REPO/dist"
    if ((!dry_run)) && [[ ! -f $wheel ]]; then
        echo "Error: the build did not produce $wheel" >&2
        exit 1
    fi
}

# The workers' image (deploy/Dockerfile): target pitwatch, or pitwatch-store with the store's endpoint
# and region in the workers' environment; then the reminder to push it.
build_image() {
    local target=(--target pitwatch)
    [[ -z $store_endpoint ]] || target=(--target pitwatch-store --build-arg "AWS_ENDPOINT_URL=$store_endpoint"
                                         --build-arg "AWS_REGION=$store_region" --build-arg "AWS_ALLOW_HTTP=$allow_http")
    run docker build -f "$REPO/deploy/Dockerfile" "${target[@]}" --build-arg "PITWATCH_VERSION=$version" \
        -t "$image" "$REPO"
    echo "Reminder: push $image where the $1 can pull it (docker push $image);" \
         "the job below starts at once and fails on workers that cannot pull it." >&2
}
