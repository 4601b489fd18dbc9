#!/bin/sh
# tests/valgrind/cli.sh MEMPLAN -- the CLI under valgrind on a few inputs
# that reach most of the library cheaply: every strategy with the CSV and
# SVG writers, the checker, the graph stages with the backward graph, order
# search and the executor (--run), recomputation with --run, swapping,
# trace statistics, period and records, the report page, and the error
# paths of each reader.  Each run must exit with its usual status; valgrind's
# own status 99 means an uninitialised read, a bad access or a definite leak.
# Run from tests/ (ctest's working directory).
set -u
M=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
C=../bench/corpus
pass=0 fail=0
vg() {
    want=$1
    shift
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        "$M" "$@" >"$T/out" 2>&1
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAILED: memplan $*: exit $rc, want $want" >&2
        tail -n 40 "$T/out" >&2
    fi
}
vg 0 plan --strategy all -o "$T/p.csv" --svg "$T/p.svg" cli/good/chain.csv
vg 0 check cli/good/chain.csv "$T/p.csv"
vg 0 plan --strategy all --json --model mobilenet_v2
vg 0 bounds cli/good/chain_halfopen.csv
vg 0 graph --train --run --order search graph/mlp.json
vg 0 graph --json --parallel-safe --strategy all --graph-out "$T/v.json.gz" graph/views.json
vg 0 graph --json "$T/v.json.gz"
vg 0 remat --policy sqrt --run graph/mlp.json
vg 0 swap graph/mlp.json
vg 0 trace stats cli/trace/loop.trace
vg 0 trace period cli/trace/loop.trace
vg 0 trace records --iteration -o "$T/r.csv" cli/trace/loop.trace
vg 0 trace svg -o "$T/t.svg" cli/trace/loop.trace
vg 0 report -o "$T/r.html" cli/good/chain.csv
# the error paths (a refused plan: exit 1; bad input: exit 2), nothing leaked
vg 2 plan cli/bad/size_text.csv
vg 1 check cli/good/chain.csv cli/bad/plan_conflict.csv
vg 2 graph graph/bad/truncated.json
vg 2 graph graph/bad/alias_cycle.json
vg 2 trace stats cli/trace/not_live.trace
echo "valgrind cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
