#!/bin/sh
# swap_trace.sh MEMPLAN -- tests `memplan swap TRACE` and `memplan swap
# --write-trace` through the real binary: a graph's trace (op times from a
# device model) gives the same figures as the graph itself on that device;
# the executor's recorded step has the graph's ops, variables, candidates
# and loads; every option that makes sense on a trace works; the options that
# need a graph, a trace with no op boundaries, a malformed op event and a
# limit below load_min fail with the exact message, exit 2 and print nothing
# on stdout; `memplan trace` reads op boundaries (stats, period, svg).
# Expected numbers are relations or worked out by hand, never copied from
# the output.  Prints "cli-swap-trace: N passed, N failed".
set -u
M=${1:?usage: swap_trace.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh
G=../graph
C=../../bench/corpus/inference
PY=/usr/bin/python3

# jcheck WHAT EXPR FILE...: EXPR, a Python expression over a, b, ... (the
# files' JSON, in order), is true.
jcheck() {
    what=$1 expr=$2
    shift 2
    if $PY - "$expr" "$@" <<'PYEOF'
import json, sys
a, b, c = ([json.load(open(f)) for f in sys.argv[2:]] + [None, None, None])[:3]
sys.exit(0 if eval(sys.argv[1]) else 1)
PYEOF
    then ok; else bad "$what: $expr"; fi
}

# clean CODE TEXT ARGS...: exit CODE, TEXT on stderr, nothing on stdout.
clean() {
    code=$1 text=$2
    shift 2
    "$M" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" -ne "$code" ]; then bad "memplan $*: exit $rc, want $code ($(cat "$T/err"))"; return; fi
    if [ -s "$T/out" ]; then bad "memplan $*: printed on stdout: $(head -c 200 "$T/out")"; return; fi
    case $(cat "$T/err") in
    *"$text"*) ok ;;
    *) bad "memplan $*: stderr lacks '$text': $(cat "$T/err")" ;;
    esac
}

# A graph and its trace on one device: every figure but the names equal.
"$M" swap --write-trace "$T/r18.trace" --device v100 $C/resnet18.graph.json.gz >"$T/w" 2>"$T/err" || bad "write-trace: $(cat "$T/err")"
grep -q "^wrote $T/r18.trace: [0-9]* ops" "$T/w" && ok || bad "write-trace line: $(cat "$T/w")"
"$M" swap --json --device v100 $C/resnet18.graph.json.gz >"$T/g.json" 2>"$T/err" || bad "swap graph: $(cat "$T/err")"
"$M" swap --json "$T/r18.trace" >"$T/t.json" 2>"$T/err" || bad "swap trace: $(cat "$T/err")"
same='all(a[k] == b[k] for k in a if k not in ("input", "graph", "model", "device", "scores"))'
jcheck "graph = its trace" "$same" "$T/g.json" "$T/t.json"
jcheck "graph = its trace, rows" 'all({k: v for k, v in x.items() if k != "ms"} == {k: v for k, v in y.items() if k != "ms"} for x, y in zip(a["scores"], b["scores"])) and len(a["scores"]) == 5' "$T/g.json" "$T/t.json"
jcheck "trace json" 'b["input"] == "trace" and b["device"] == "trace" and a["input"] == "graph"' "$T/g.json" "$T/t.json"
"$M" trace stats --json "$T/r18.trace" >"$T/st.json" 2>"$T/err" || bad "trace stats: $(cat "$T/err")"
jcheck "stats ops" 'a["ops"] == b["ops"] and a["op_ns"] == b["compute_ns"] and a["peak_bytes"] >= b["peak"]' "$T/st.json" "$T/g.json"

# Limit mode on the trace and on the graph: the same rows.
lim=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print((d["peak"]+d["load_min"])//2)' "$T/g.json")
"$M" swap --json --mode limit --limit "$lim" --score swdoa --link pcie4 --device v100 $C/resnet18.graph.json.gz >"$T/gl.json" 2>"$T/err" || bad "limit graph: $(cat "$T/err")"
"$M" swap --json --mode limit --limit "$lim" --score swdoa --link pcie4 "$T/r18.trace" >"$T/tl.json" 2>"$T/err" || bad "limit trace: $(cat "$T/err")"
jcheck "limit: graph = trace" "$same"' and a["scores"][0]["peak"] == b["scores"][0]["peak"] and a["scores"][0]["stall_ns"] == b["scores"][0]["stall_ns"]' "$T/gl.json" "$T/tl.json"
jcheck "limit met" "b['scores'][0]['limit_met'] and b['scores'][0]['peak'] <= $lim" "$T/gl.json" "$T/tl.json"

# Text, --score bo, --link BW,LAT and --svg on a trace.
expect 0 "op times from the trace:" swap --score bo --link 12G,10us "$T/r18.trace"
"$M" swap --score doa --svg "$T/load.svg" "$T/r18.trace" >/dev/null 2>"$T/err" || bad "swap --svg on a trace: $(cat "$T/err")"
$PY -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); t = " ".join(x.firstChild.data for x in d.getElementsByTagName("text") if x.firstChild); sys.exit(0 if "no swapping" in t and "swapped (doa)" in t else 1)' "$T/load.svg" && ok || bad "swap --svg content on a trace"

# The executor's recorded step: the graph's ops, variables, candidates and
# loads (only the op times, measured in other runs, differ).
"$M" swap --device run --write-trace "$T/cnn.trace" $G/cnn_small.json >"$T/w" 2>"$T/err" || bad "record: $(cat "$T/err")"
grep -q "measured on the reference executor" "$T/w" && ok || bad "record line: $(cat "$T/w")"
"$M" swap --json --min-size 4K --score doa "$T/cnn.trace" >"$T/ct.json" 2>"$T/err" || bad "swap recorded: $(cat "$T/err")"
"$M" swap --json --min-size 4K --score doa --device run $G/cnn_small.json >"$T/cg.json" 2>"$T/err" || bad "swap --device run: $(cat "$T/err")"
jcheck "recorded = graph" 'all(a[k] == b[k] for k in ("ops", "variables", "candidates", "peak", "load_min", "footprint_auto"))' "$T/ct.json" "$T/cg.json"

# Options that need a graph, a trace without op boundaries, a bad op
# event, a limit below load_min: the message, exit 2, nothing on stdout.
clean 2 "memplan swap: $T/r18.trace: --joint needs a graph (its recompute plans come from the graph's nodes)" swap --joint "$T/r18.trace"
clean 2 "memplan swap: $T/r18.trace: --run needs a graph (the executor runs the graph's nodes)" swap --run "$T/r18.trace"
clean 2 "memplan swap: $T/r18.trace: --device needs a graph (a trace carries its own op times)" swap --device h100 "$T/r18.trace"
clean 2 "memplan swap: $T/r18.trace: --write-trace needs a graph (this is a trace already)" swap --write-trace "$T/x.trace" "$T/r18.trace"
clean 2 "memplan swap: trace/loop.trace: the trace has no op boundaries ('o DURATION [NAME]' lines): a swap plan needs the ops of the iteration and their times." swap trace/loop.trace
clean 2 "record
one from a graph with 'memplan swap --write-trace OUT.trace [--device NAME|run] GRAPH'" swap trace/loop.trace
clean 2 "trace/op_duration.trace:5: field 'duration': '1.5' is not a non-negative integer" swap trace/op_duration.trace
clean 2 "memplan swap: limit 1 bytes is below load_min" swap --mode limit --limit 1 "$T/r18.trace"
clean 2 "memplan swap: --write-trace writes the trace and stops: not with --joint, --run or --svg" swap --write-trace "$T/y.trace" --svg "$T/y.svg" $G/mlp.json
[ ! -e "$T/y.trace" ] && [ ! -e "$T/x.trace" ] && ok || bad "a refused --write-trace left a file"
cp $G/mlp.json "$T/in.json"
clean 2 "refusing to overwrite an input" swap --write-trace "$T/in.json" "$T/in.json"

# memplan trace on op boundaries: stats count them, the period of a loop
# whose op times differ from iteration to iteration is found (an op's
# symbol is its name), records and the picture ignore them.
expect 0 "ops                      8, 0.000 ms in all" trace stats trace/ops_loop.trace
"$M" trace period --json trace/ops_loop.trace >"$T/p.json" 2>"$T/err" || bad "trace period: $(cat "$T/err")"
jcheck "ops period" 'a["found"] and a["period"] == 6 and a["iterations"] == 4 and a["edits"] == 0' "$T/p.json"
expect 0 "0,1,4,64" trace records trace/ops_loop.trace
expect 0 "wrote $T/o.svg" trace svg -o "$T/o.svg" trace/ops_loop.trace

echo "cli-swap-trace: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
