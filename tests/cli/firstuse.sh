#!/bin/sh
# firstuse.sh MEMPLAN -- what a new user meets in the first ten minutes,
# through the real binary, each with its exact message and exit code:
# `memplan help [COMMAND]`, "did you mean" for names from fixed lists, a
# file of the wrong kind named with the command that reads it (swapped
# `check` arguments too), SVG outputs that must be named .svg, `--model`
# taking a records file, and `plan --strategy all` measuring each ratio
# against the bound of its strategy's kind.
# Prints "cli-firstuse: N passed, N failed".
set -u
M=${1:?usage: firstuse.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh
G=../graph/mlp.json
GZ=../../bench/corpus/inference/alexnet.graph.json.gz
PY=/usr/bin/python3

# fails CODE MESSAGE ARGS...: exit CODE, MESSAGE as the whole of stderr and
# nothing on stdout.
fails() {
    code=$1 want=$2
    shift 2
    got=$("$M" "$@" 2>&1 >"$T/f.out")
    rc=$?
    if [ "$rc" -eq "$code" ] && [ ! -s "$T/f.out" ] && [ "$got" = "$want" ]; then ok; else
        bad "memplan $*: exit $rc (want $code), $(wc -c <"$T/f.out") bytes on stdout, stderr
  $got
want
  $want"
    fi
}

# same "ARGS A" "ARGS B": both exit 0 with the same stdout.
same() {
    # shellcheck disable=SC2086  # the arguments are word lists on purpose
    "$M" $1 >"$T/a.out" 2>&1 && "$M" $2 >"$T/b.out" 2>&1 || { bad "memplan $1 / $2: failed"; return; }
    if cmp -s "$T/a.out" "$T/b.out"; then ok; else bad "memplan $1 and memplan $2 differ"; fi
}

# none FILE...: none of the files exists (nothing was written).
none() {
    for f in "$@"; do
        if [ -e "$f" ]; then bad "$f was written"; return; fi
    done
    ok
}

# ---- 1. memplan help [COMMAND] ---------------------------------------------
for c in plan check bounds strategies models trace graph remat; do
    same "help $c" "$c --help"
done
same "help" "--help"
expect 0 "usage: memplan plan" help plan
fails 2 "memplan help: unknown command 'frob' (see 'memplan help')" help frob
fails 2 "memplan help: unknown command 'plna'; did you mean 'plan'?" help plna
fails 2 "memplan: unknown command 'chekc'; did you mean 'check'?" chekc

# ---- 2. did you mean --------------------------------------------------------
fails 2 "memplan plan: unknown strategy 'greedy-sise'; did you mean 'greedy-size'?" \
    plan --strategy greedy-sise good/chain.csv
fails 2 "memplan plan: unknown strategy 'best' (see 'memplan strategies')" \
    plan --strategy best good/chain.csv
fails 2 "memplan: unknown model 'mobilenet_v3'; did you mean 'mobilenet_v1' or 'mobilenet_v2'?" \
    plan --model mobilenet_v3
fails 2 "memplan: unknown model 'MobileNet_V1'; did you mean 'mobilenet_v1'?" bounds --model MobileNet_V1
fails 2 "memplan: unknown model 'lenet' (see 'memplan models', or give a records file)" \
    plan --model lenet
fails 2 "memplan graph: unknown strategy 'inordr'; did you mean 'inorder'?" graph --strategy inordr $G
fails 2 "memplan graph: unknown --order value 'serach'; did you mean 'search'?" graph --order serach $G
fails 2 "memplan graph: unknown --order value 'sideways' (one of: 'given', 'search')" \
    graph --order sideways $G
fails 2 "memplan graph: unknown --parallel-safe value 'ancestors'; did you mean 'ancestor'?" \
    graph --parallel-safe=ancestors $G
fails 2 "memplan remat: unknown policy 'revolv=3'; did you mean 'revolve[=S]'?" remat --policy revolv=3 $G
fails 2 "memplan remat: unknown policy 'frugal' (one of: 'none', 'segments=LIST', 'sqrt', 'cheap', 'budget', 'logn[=K]', 'revolve[=S]', 'optimal[=BYTES]', 'all')" \
    remat --policy frugal $G
fails 2 "memplan remat: unknown strategy 'objects-greedy-sizes'; did you mean 'objects-greedy-size'?" \
    remat --strategy objects-greedy-sizes $G
fails 2 "memplan trace: unknown subcommand 'stat'; did you mean 'stats'?" trace stat trace/loop.trace

# ---- 3. a file of the wrong kind -------------------------------------------
fails 2 "memplan: $G: this is a memplan-graph/1 graph, not a records CSV; read it with \"memplan graph $G\"" \
    plan -o "$T/p.csv" --svg "$T/p.svg" $G
none "$T/p.csv" "$T/p.svg"
fails 2 "memplan: $GZ: this is a memplan-graph/1 graph, not a records CSV; read it with \"memplan graph $GZ\"" \
    bounds $GZ
fails 2 "memplan: $G: this is a memplan-graph/1 graph, not a records CSV; read it with \"memplan graph $G\"" \
    check $G good/chain_plan.csv
fails 2 "memplan: trace/loop.trace: this is a memplan-trace/1 trace, not a records CSV; turn it into records with \"memplan trace records -o RECORDS.csv trace/loop.trace\"" \
    plan trace/loop.trace
fails 2 "memplan: good/chain_plan.csv: this is a plan CSV, not a records CSV; the records come first: \"memplan check good/chain.csv good/chain_plan.csv\"" \
    check good/chain_plan.csv good/chain.csv
fails 2 "memplan: good/chain.csv: this is a records CSV, not a plan CSV; plan it with \"memplan plan good/chain.csv\"" \
    check good/chain.csv good/chain.csv
fails 2 "memplan: good/chain_plan.csv: this is a plan CSV, not a records CSV; check it with \"memplan check RECORDS.csv good/chain_plan.csv\"" \
    plan good/chain_plan.csv
fails 2 "memplan: good/chain.csv: this is a records CSV, not a memplan-graph/1 graph; plan it with \"memplan plan good/chain.csv\"" \
    graph good/chain.csv
fails 2 "memplan: $G: this is a memplan-graph/1 graph, not a memplan-trace/1 trace; read it with \"memplan graph $G\"" \
    trace stats $G
# Malformed files of the right kind keep their FILE:LINE: field message.
fails 2 "memplan: bad/dup_id.csv:4: field 'id': duplicate id 0 (first on line 2)" plan bad/dup_id.csv
fails 2 "memplan: bad/unknown_col.csv:1: header: unknown column 'colour' (expected id,first,last,size or id,lower,upper,size)" \
    check bad/unknown_col.csv good/chain_plan.csv
fails 2 "memplan: bad/plan_header.csv:1: header: unknown column 'where' (expected id,offset,size[,object|,pool])" \
    check good/chain.csv bad/plan_header.csv

# ---- 4. SVG outputs are named .svg ------------------------------------------
SVGMSG="only SVG is written; name the file .svg (convert with e.g. rsvg-convert)"
fails 2 "memplan: --svg $T/x.png: $SVGMSG" plan -o "$T/p.csv" --svg "$T/x.png" good/chain.csv
none "$T/p.csv" "$T/x.png"
fails 2 "memplan: --svg $T/x.svg.pdf: $SVGMSG" plan --svg "$T/x.svg.pdf" good/chain.csv
fails 2 "memplan: -o $T/x.PNG: $SVGMSG" trace svg -o "$T/x.PNG" trace/loop.trace
fails 2 "memplan: --svg $T/x: $SVGMSG" remat --svg "$T/x" $G
none "$T/x.svg.pdf" "$T/x.PNG" "$T/x"
expect 0 "lower bound 300 B" plan --svg "$T/x.SVG" good/chain.csv
if head -c 300 "$T/x.SVG" | grep -q "<svg"; then ok; else bad ".SVG (any case) not written"; fi

# ---- 5. --model takes a records file ----------------------------------------
same "bounds --model good/chain.csv" "bounds good/chain.csv"
"$M" plan -o "$T/a.csv" good/chain.csv >/dev/null 2>&1 &&
    "$M" plan -o "$T/b.csv" --model good/chain.csv >/dev/null 2>&1 &&
    cmp -s "$T/a.csv" "$T/b.csv" && ok || bad "plan --model FILE: not the plan of FILE"
mkdir "$T/models"
"$M" models --write "$T/models" >/dev/null
same "bounds --model mobilenet_v2" "bounds --model $T/models/mobilenet_v2.records.csv"
fails 2 "memplan: no/such.csv: No such file or directory" plan --model no/such.csv
expect 0 "RECORDS.csv" plan --help

# ---- 6. ratios against the bound of each strategy's kind -----------------------
# MobileNet v2: offsets bound 6021120, objects bound 6924288 (pisarchyk2020
# Tables 1-2: 5.742 and 6.604 MiB; checked in run.sh).
"$M" plan --strategy all --json --model mobilenet_v2 >"$T/all.json" 2>"$T/err" || bad "plan all: $(cat "$T/err")"
"$M" strategies --json >"$T/kinds.json"
"$PY" - "$T/all.json" "$T/kinds.json" <<'EOF' && ok || bad "JSON ratios not against each kind's bound"
import json, sys
d, k = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
kind = {s["name"]: s["kind"] for s in k["strategies"]}
assert d["lower_bound"] == 6021120 and d["objects_lower_bound"] == 6924288, d
seen = set()
for r in d["results"]:
    want = "objects" if kind[r["strategy"]] == "objects" else "offsets"
    lb = 6924288 if want == "objects" else 6021120
    assert r["bound"] == want, r
    assert abs(r["ratio"] - r["footprint"] / lb) < 1e-6, r
    assert r["ratio"] >= 1.0, r
    seen.add(want)
assert seen == {"offsets", "objects"}, seen
EOF
"$M" plan --strategy all --model mobilenet_v2 >"$T/all.txt" 2>"$T/err" || bad "plan all: $(cat "$T/err")"
expect 0 "ratio to bound" plan --strategy all --model mobilenet_v2
# Columns: strategy, footprint, its size in units (two words), ratio, bound.
awk '$1 ~ /^objects-/ { n++; if ($6 != "objects" || ($5 - $2 / 6924288) > 5e-5 || ($2 / 6924288 - $5) > 5e-5) bad++ }
     $1 == "greedy-size" { n++; if ($6 != "offsets" || $5 != "1.0000") bad++ }
     END { exit !(n == 7 && !bad) }' "$T/all.txt" && ok || bad "text ratios: $(cat "$T/all.txt")"

echo "cli-firstuse: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
