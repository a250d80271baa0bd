# Shared by deploy/dataflow.sh and deploy/flink.sh (sourced, not run).
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
