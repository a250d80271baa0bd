#!/bin/sh
# How tests/data/lake-v1/ was made: a lake written by pitwatch at main 819993f (the layout before
# Delta tables), for tests/pipelines/test_migrate.py.  Run from a checkout of 819993f with its venv:
#   PITWATCH=/path/to/819993f/.venv/bin/pitwatch sh make.sh OUT
# Every path the lake records is relative to OUT (the runs run with OUT as working directory), so
# a test that copies OUT's folders and runs with the copy as working directory sees the same ones.
set -eu
P=${PITWATCH:?the pitwatch of main 819993f}
OUT=${1:?an empty folder}
mkdir -p "$OUT" && cd "$OUT"
sim() { "$P" simulate --out "$1" --tables baccarat=1,stud=1 --hours "$2" --start "$3" --seed "$4" \
        --faults 0.03 --workers 1 -q; }
sim s0 0.3 2026-11-28T20:00:00Z 1      # gaming day 2026-11-28: the one-off run
sim s12 0.6 2026-11-30T05:42:00Z 2     # 2026-11-29 and 2026-11-30, play across the 06:00 cutoff: nightly
sim s3 0.3 2026-12-01T20:00:00Z 3      # 2026-12-01: the night after the migration (not in the lake)
mkdir -p oneoff inbox next
mv s0/2026-11-28 oneoff/ && mv s12/2026-11-29 s12/2026-11-30 inbox/ && mv s3/2026-12-01 next/
{ head -1 s0/devices.csv; for f in s0 s12 s3; do tail -n +2 $f/devices.csv; done; } > inbox/devices.csv
rm -rf s0 s12 s3
find oneoff inbox next -name '*.jsonl' -exec gzip -n9 {} +
# mtimes fixed: the nightly state records each inbox file's mtime; the test sets them back alike
find oneoff inbox next -type f -exec touch -d 2026-12-01T12:00:00Z {} +
"$P" run oneoff/2026-11-28/*.jsonl.gz --lake lake --devices inbox/devices.csv --quiet || test $? = 1
"$P" run --day 2026-11-29 --inbox inbox --lake lake --quiet || test $? = 1
"$P" run --day 2026-11-30 --inbox inbox --lake lake --quiet || test $? = 1
