#!/bin/sh
# swap.sh MEMPLAN -- tests `memplan swap` through the real binary on
# tests/graph/mlp.json and corpus graphs: a row per score whose figures agree
# with each other (no-overhead rows never stall, never raise the peak; limit
# rows meet their limit or say they do not), the JSON, BO never worse than the
# best single score, and the usage errors with their exact messages.  Expected
# numbers are relations or worked out by hand, never copied from the output.
# Prints "cli-swap: N passed, N failed".
set -u
M=${1:?usage: swap.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh
G=../graph
C=../../bench/corpus/inference
PY=/usr/bin/python3

# jcheck WHAT FILE EXPR: EXPR, a Python expression over d (FILE's JSON) and
# s(name) (the row of a score), is true.
jcheck() {
    what=$1 file=$2 expr=$3
    if $PY - "$file" "$expr" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
def s(name): return [r for r in d["scores"] if r["score"] == name][0]
sys.exit(0 if eval(sys.argv[2]) else 1)
PYEOF
    then ok; else bad "$what: $expr"; fi
}

# Every score, no-overhead mode, on ResNet-18: no stall, peak never above the
# original, BO at least as low as the best of the four scores.
"$M" swap --json $C/resnet18.graph.json.gz >"$T/r18.json" 2>"$T/err" || bad "swap resnet18: $(cat "$T/err")"
jcheck "resnet18 rows" "$T/r18.json" 'len(d["scores"]) == 5 and all(r["stall_ns"] == 0 for r in d["scores"])'
jcheck "resnet18 peaks" "$T/r18.json" 'all(r["peak"] <= d["peak"] for r in d["scores"])'
jcheck "resnet18 bo" "$T/r18.json" 's("bo")["peak"] <= min(s(n)["peak"] for n in ("doa", "aoa", "wdoa", "swdoa"))'
jcheck "resnet18 load_min" "$T/r18.json" 'd["load_min"] <= d["peak"] and d["candidates"] > 0'
jcheck "resnet18 device" "$T/r18.json" 'd["device"] == "gtx1080ti" and d["link"] == "pcie3"'

# Limit mode half-way between load_min and the peak: a row that says it met
# the limit is under it, BO meets it with no more overhead than any score
# that meets it.
lim=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print((d["peak"]+d["load_min"])//2)' "$T/r18.json")
"$M" swap --json --mode limit --limit "$lim" $C/resnet18.graph.json.gz >"$T/lim.json" 2>"$T/err" || bad "swap --limit: $(cat "$T/err")"
jcheck "limit rows" "$T/lim.json" "all(r['peak'] <= $lim for r in d['scores'] if r['limit_met'])"
jcheck "limit bo" "$T/lim.json" 's("bo")["limit_met"] and all(s("bo")["overhead"] <= s(n)["overhead"] for n in ("doa", "aoa", "wdoa", "swdoa") if s(n)["limit_met"])'

# One score, text output, other devices and links.
expect 0 "swdoa" swap --score swdoa --device h100 --link pcie5 $C/squeezenet1_1.graph.json.gz
expect 0 "link custom: out 10.0 us + 12.0 GB/s" swap --score doa --link 12G,10us $G/mlp.json
expect 0 "mode no-overhead" swap --score doa $G/mlp.json

# Keep, swap or recompute: along the ladder the joint plan is feasible
# wherever either pure one is and never slower; at one limit, three rows.
"$M" swap --joint --json --min-size 4K $G/cnn_small.json >"$T/joint.json" 2>"$T/err" || bad "swap --joint: $(cat "$T/err")"
jcheck "joint points" "$T/joint.json" 'len(d["points"]) == 12 and d["points"][0]["joint"]["overhead"] == 0'
jcheck "joint never worse" "$T/joint.json" 'all(p["joint"]["feasible"] and p["joint"]["total_ns"] <= p[k]["total_ns"] for p in d["points"] for k in ("swap", "recompute") if p[k]["feasible"])'
jcheck "joint within limits" "$T/joint.json" 'all(p["joint"]["peak"] <= p["limit"] for p in d["points"] if p["joint"]["feasible"])'
expect 0 "recompute only" swap --joint --limit 2MiB --min-size 4K $G/cnn_small.json
expect 2 "memplan swap: ../../bench/corpus/train/resnet18-b16.graph.json.gz: --joint needs a forward graph" swap --joint ../../bench/corpus/train/resnet18-b16.graph.json.gz

# Executed for real: every output bit-identical to the plain step's.
"$M" swap --run --json --score swdoa --min-size 4K $G/cnn_small.json >"$T/run.json" 2>"$T/err" || bad "swap --run: $(cat "$T/err")"
jcheck "run identical" "$T/run.json" 'd["run"]["runs"][0]["identical"] == d["run"]["runs"][0]["outputs"] > 0 and d["run"]["runs"][0]["swapped"] > 0'
expect 0 "bit-identical" swap --run --score doa --min-size 4K $G/cnn_small.json
expect 2 "memplan swap: --run and --joint do not go together" swap --run --joint $G/mlp.json
expect 0 "device run (op times measured on the reference executor)" swap --device run --score doa --min-size 4K $G/cnn_small.json
expect 2 "memplan swap: --device run does not go with --joint" swap --device run --joint $G/mlp.json

# The load curve as a picture: valid XML, both curves, the limit; an
# output that is the input is refused.
"$M" swap --score swdoa --mode limit --limit 2MiB --min-size 4K --svg "$T/load.svg" $G/cnn_small.json >/dev/null 2>"$T/err" || bad "swap --svg: $(cat "$T/err")"
$PY -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); t = " ".join(x.firstChild.data for x in d.getElementsByTagName("text") if x.firstChild); sys.exit(0 if "no swapping" in t and "swapped (swdoa)" in t and "limit 2.00 MiB" in t else 1)' "$T/load.svg" && ok || bad "swap --svg content"
cp $G/cnn_small.json "$T/in.json"
expect 2 "refusing to overwrite an input" swap --svg "$T/in.json" "$T/in.json"

# Errors.
expect 2 "memplan swap: limit 1 bytes is below load_min" swap --mode limit --limit 1 $C/resnet18.graph.json.gz
expect 2 "memplan swap: unknown device 'tpu' (gtx1080ti, v100, h100, cpu)" swap --device tpu $G/mlp.json
expect 2 "memplan swap: unknown link 'pcie9'" swap --link pcie9 $G/mlp.json
expect 2 "memplan swap: link 'x,1us': field 'bandwidth': 'x' is not a positive number of bytes/s (e.g. 12G)" swap --link x,1us $G/mlp.json
expect 2 "memplan swap: unknown score 'wdao'; did you mean 'wdoa'?" swap --score wdao $G/mlp.json
expect 2 "memplan swap: --mode limit needs --limit SIZE" swap --mode limit $G/mlp.json
expect 2 "memplan swap: --limit needs --mode limit" swap --limit 1M $G/mlp.json
expect 2 "memplan swap: give one graph or trace file" swap
expect 2 "memplan swap: --limit 'lots': " swap --mode limit --limit lots $G/mlp.json
expect 0 "usage: memplan swap [options] GRAPH.json[.gz]" swap --help
expect 0 "usage: memplan swap [options] GRAPH.json[.gz]" help swap

echo "cli-swap: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
