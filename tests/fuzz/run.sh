#!/bin/sh
# tests/fuzz/run.sh -- one fuzz target's ctest (tests/fuzz/tests.cmake):
# replays its seeds (fuzz/corpus/NAME) and regression inputs
# (fuzz/regress/NAME), then fuzzes for SECONDS.  New inputs go to a scratch
# directory in the build tree, never into the repository.  Fails on any
# crash, leak, sanitizer report, broken invariant or input slower than 25 s.
#     run.sh TARGET_BINARY FUZZ_DIR WORK_DIR SECONDS
set -eu
bin=$1 fuzz=$2 work=$3 seconds=$4
name=$(basename "$bin")
case $name in
fuzz_records | fuzz_plan_csv) dict=records ;;
fuzz_trace | fuzz_arena) dict=trace ;;
*) dict=graph ;;
esac
rm -rf "$work"
mkdir -p "$work/new" "$work/crash"
dirs="$fuzz/corpus/$name"
[ -d "$fuzz/regress/$name" ] && dirs="$dirs $fuzz/regress/$name"
# shellcheck disable=SC2086 # dirs is a list of directories
"$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
    -dict="$fuzz/dict/$dict.dict" -artifact_prefix="$work/crash/" "$work/new" $dirs \
    >"$work/log" 2>&1 || {
    status=$?
    tail -n 60 "$work/log"
    echo "$name: FAILED (exit $status); the input is in $work/crash/ -- docs/fuzz.md says how to keep it as a regression input"
    exit 1
}
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
echo "$name: no crash in ${runs:-?} runs over $seconds s (seeds and regression inputs included)"
