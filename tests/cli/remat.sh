#!/bin/sh
# remat.sh MEMPLAN -- tests `memplan remat` through the real binary on
# tests/graph/mlp.json, generated deep chains and corpus convnets: a row per
# policy with figures that agree with each other and with `memplan graph`,
# recomputation lowering the peak of a deep chain, --run bit-identical to the
# plain training step for every policy, --budget (feasible plans fit, 1 byte
# names the least achievable peak, the extra compute never grows with the
# budget), --svg and --graph-out, and the usage errors.  Expected numbers are
# relations or worked out by hand, never copied from the program's output.
# Prints "cli-remat: N passed, N failed".
set -u
M=${1:?usage: remat.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh
G=../graph
C=../../bench/corpus/inference
PY=/usr/bin/python3

# jcheck WHAT FILE EXPR: EXPR, a Python expression over d (FILE's JSON), is
# true; jget FILE EXPR prints its value.  Both know p(name) (the row of a
# policy), ok(row) and rows() (the rows without an error).
cat >"$T/j.py" <<'EOF'
import json, sys
mode, path, expr = sys.argv[1:4]
try:
    d = json.load(open(path))
except Exception as e:
    print("  unreadable JSON in %s: %s" % (path, e), file=sys.stderr)
    sys.exit(1)
def rows(): return [r for r in d.get("policies", []) if "error" not in r]
def p(name): return [r for r in d["policies"] if r["policy"] == name][0]
def ok(r): return "error" not in r
try:
    r = eval("(" + expr + ")")
except Exception as e:
    print("  %s: %r" % (type(e).__name__, e), file=sys.stderr)
    sys.exit(1)
if mode == "get":
    print(r)
    sys.exit(0)
if not r: print("  false:", expr, file=sys.stderr)
sys.exit(0 if r else 1)
EOF
jcheck() {
    if "$PY" "$T/j.py" check "$2" "$3"; then ok; else bad "$1 ($3 on $2)"; fi
}
jget() {
    "$PY" "$T/j.py" get "$1" "$2" || echo 0
}

# run_to NAME ARGS...: memplan ARGS with stdout in $T/NAME, stderr in
# $T/NAME.err; wants exit 0.
run_to() {
    name=$1
    shift
    "$M" "$@" >"$T/$name" 2>"$T/$name.err"
    rc=$?
    if [ "$rc" -eq 0 ]; then ok; else bad "memplan $*: exit $rc: $(cat "$T/$name.err")"; fi
}

# quiet CODE TEXT ARGS...: exit CODE, TEXT on stderr and nothing on stdout.
quiet() {
    code=$1 text=$2
    shift 2
    "$M" "$@" >"$T/q.out" 2>"$T/q.err"
    rc=$?
    if [ "$rc" -ne "$code" ]; then bad "memplan $*: exit $rc, want $code ($(cat "$T/q.err"))"; return; fi
    if [ -s "$T/q.out" ]; then bad "memplan $*: printed on stdout: $(head -c 300 "$T/q.out")"; return; fi
    case $(cat "$T/q.err") in
    *"$text"*) ok ;;
    *) bad "memplan $*: stderr lacks '$text': $(cat "$T/q.err")" ;;
    esac
}

POLICIES="none segments sqrt cheap budget logn revolve optimal"

# Figures every row must satisfy, whatever the graph: the placement never
# beats its bound; nodes = training graph + recompute nodes; the ratio and
# percentage are what they say; no recompute node, no extra FLOPs; none is
# the plain training graph.
rows_consistent() {
    jcheck "$1: every row consistent" "$2" 'all(r["lower_bound"] <= r["peak"]
        and r["nodes"] == d["training_nodes"] + r["recomputed"]
        and abs(r["ratio"] - r["peak"] / d["none_peak"]) < 1e-5
        and abs(r["extra_pct"] - 100.0 * r["extra_flops"] / d["forward_flops"]) < 1e-2
        and (r["recomputed"] > 0 or r["extra_flops"] == 0) for r in rows())'
}
consistent() {
    rows_consistent "$1" "$2"
    jcheck "$1: none is the plain graph" "$2" 'ok(p("none")) and p("none")["extra_flops"] == 0
        and p("none")["recomputed"] == 0 and p("none")["peak"] == d["none_peak"]
        and p("none")["nodes"] == d["training_nodes"]'
}

# Deep chains: x[32,128] -> L x (linear 128->128, relu) -> linear 128->10.
# Every activation is 32*128*4 = 16 KiB, so keeping all of them costs far
# more than keeping about sqrt(L) and recomputing the rest.  L = 12 for the
# policies, L = 8 for the budget searches (each evaluates every candidate).
for L in 8 12; do
    "$PY" - "$T/chain$L.graph.json" "$L" <<'EOF'
import json, sys
N, W, L = 32, 128, int(sys.argv[2])
t, n = [], []
def tensor(name, shape, kind, trainable=None):
    e = {"id": len(t), "name": name, "shape": shape, "dtype": "float32",
         "bytes": 4 * eval("*".join(map(str, shape))), "kind": kind, "alias_of": None}
    if trainable is not None: e["trainable"] = trainable
    t.append(e)
    return e["id"]
def node(name, op, ins, outs, attrs):
    n.append({"id": len(n), "name": name, "op": op, "inputs": ins, "outputs": outs, "attrs": attrs})
x = tensor("x", [N, W], "input")
for i in range(L):
    w = tensor("fc%d.weight" % i, [W, W], "parameter", True)
    b = tensor("fc%d.bias" % i, [W], "parameter", True)
    h = tensor("fc%d" % i, [N, W], "activation")
    node("fc%d" % i, "nn.Linear", [x, w, b], [h], {"config": {"in_features": W, "out_features": W}})
    x = tensor("relu%d" % i, [N, W], "activation")
    node("relu%d" % i, "nn.ReLU", [h], [x], {"inplace_capable": True, "inplace": False})
w = tensor("head.weight", [10, W], "parameter", True)
y = tensor("logits", [N, 10], "output")
node("head", "nn.Linear", [x, w], [y], {"config": {"in_features": W, "out_features": 10, "bias": False}})
g = {"format": "memplan-graph/1", "model": {"name": "chain%d" % L, "batch": N, "train": False, "level": "memplan"},
     "tensors": t, "nodes": n, "order": list(range(len(n))), "outputs": [y], "loss": None}
json.dump(g, open(sys.argv[1], "w"))
EOF
done
CH=$T/chain12.graph.json
CB=$T/chain8.graph.json

# ---- every policy on mlp.json ---------------------------------------------------
# (x[4,8] -> fc1 -> relu -> fc2 -> logits[4,3]; see graph.sh)
run_to mlp.json remat --json $G/mlp.json
jcheck "mlp: a row per policy, none first" "$T/mlp.json" \
    '[r["policy"] for r in d["policies"]] == "'"$POLICIES"'".split()'
consistent mlp "$T/mlp.json"
# The training graph is mp_graph_backward's, the one `memplan graph --train`
# plans: the same nodes, and the same bound after in-place.
run_to mlp-graph.json graph --accumulate --json $G/mlp.json
jcheck "mlp: none's bound and nodes are memplan graph --train's" "$T/mlp.json" \
    'p("none")["lower_bound"] == '"$(jget "$T/mlp-graph.json" 'd["lower_bound_inplace"]')"' and
     d["training_nodes"] == '"$(jget "$T/mlp-graph.json" 'd["nodes"]')"
# Parameters and gradients (1536 B on mlp: weights 512 + 64 + 192, and as
# much again in gradients) are live at every step: they add to the bound.
run_to mlp-p.json remat --json --persistent --policy none $G/mlp.json
jcheck "mlp: --persistent adds the 1536 persistent bytes to the bound" "$T/mlp-p.json" \
    'd["policies"][0]["lower_bound"] == '"$(jget "$T/mlp.json" 'p("none")["lower_bound"]')"' + 1536'
for pol in none segments=1 segments=0,2 sqrt cheap budget logn logn=2 revolve optimal; do
    expect 0 "$pol" remat --policy "$pol" $G/mlp.json
done
expect 0 "no recompute" remat $G/mlp.json
expect 0 '"policies":[{"policy":"sqrt"' remat --json --policy sqrt $G/mlp.json
expect 0 '"policy":"logn=2"' remat --json --policy logn=2 $G/mlp.json
expect 0 '"policy":"segments=1"' remat --json --policy segments=1 $G/mlp.json
expect 0 '"strategy":"greedy-size"' remat --json --strategy greedy-size $G/mlp.json

# --run: each plan executed (memory poisoned before every write) gives the
# loss and every parameter gradient of the plain step bit for bit.
run_to mlp-run.json remat --json --run $G/mlp.json
jcheck "mlp --run: every policy but segments (it needs a list) bit-identical" "$T/mlp-run.json" \
    'all(ok(r) == (r["policy"] != "segments") for r in d["policies"]) and
     all(r.get("identical") is True for r in rows())'
run_to mlp-run.txt remat --run --seed 7 $G/mlp.json
n_ok=$(jget "$T/mlp-run.json" 'len(rows())')
n_same=$(grep -c "bit-identical to the plain step" "$T/mlp-run.txt")
if [ "$n_same" -eq "$n_ok" ]; then ok; else bad "mlp --run text: $n_same bit-identical lines for $n_ok plans"; fi

# ---- the deep chain ----------------------------------------------------------------
run_to chain.json remat --json --run $CH
consistent chain "$T/chain.json"
jcheck "chain: every policy but segments (it needs a list) applies to a chain" "$T/chain.json" \
    'all(ok(r) == (r["policy"] != "segments") for r in d["policies"])'
jcheck "chain: every policy bit-identical" "$T/chain.json" 'all(r.get("identical") is True for r in rows())'
jcheck "chain: sqrt, logn and revolve need less than keeping everything" "$T/chain.json" \
    'all(p(n)["peak"] < d["none_peak"] for n in ("sqrt", "logn", "revolve"))'
# sqrt drops values and recomputes each at most once; revolve picks the
# fewest slots whose stage runs t(n, s) are at most n, one forward pass if
# the stages cost the same (on this chain they nearly do: pairs of linear
# and relu, the cheap head apart).
jcheck "chain: sqrt recomputes at most one forward pass" "$T/chain.json" \
    '0 < p("sqrt")["extra_flops"] <= d["forward_flops"]'
jcheck "chain: revolve recomputes about one forward pass at most" "$T/chain.json" \
    '0 < p("revolve")["extra_flops"] <= 1.25 * d["forward_flops"]'
jcheck "chain: sqrt keeps fewer values than none" "$T/chain.json" 'p("sqrt")["kept"] < p("none")["kept"]'

# --graph-out: the transformed graph; `memplan graph` reads it back, counts
# its nodes and runs it like any graph.
run_to chain-sqrt.json remat --json --policy sqrt --graph-out "$T/chain-sqrt.graph.json" $CH
run_to chain-sqrt-graph.json graph --json "$T/chain-sqrt.graph.json"
jcheck "chain: --graph-out has the plan's nodes" "$T/chain-sqrt-graph.json" \
    'd["nodes"] == '"$(jget "$T/chain-sqrt.json" 'd["policies"][0]["nodes"]')"
expect 0 "bit-identical to the naive run" graph --run "$T/chain-sqrt.graph.json"
# --svg: a picture of the placement, written whole or not at all.
run_to chain-svg.txt remat --policy logn --svg "$T/chain.svg" $CH
if head -c 300 "$T/chain.svg" | grep -q "<svg"; then ok; else bad "--svg wrote no SVG"; fi
quiet 2 "No such file or directory" remat --policy sqrt --svg "$T/no/dir/x.svg" $CH
quiet 2 "No such file or directory" remat --policy sqrt --graph-out "$T/no/dir/x.json" $CH
quiet 2 "No such file or directory" remat --policy sqrt --svg "$T/both.svg" --graph-out "$T/no/dir/x.json" $CH
if [ -e "$T/no/dir/x.svg" ] || [ -e "$T/no/dir/x.json" ] || [ -e "$T/both.svg" ]; then
    bad "a failed write left a file"
else ok; fi

# ---- --budget ----------------------------------------------------------------------
run_to chain8.json remat --json $CB
none_peak=$(jget "$T/chain8.json" 'd["none_peak"]')
# sqrt and logn=1 plans are among the candidates: with a policy's peak as
# the budget, the plan chosen costs no more extra compute than it.
for pol in sqrt logn; do
    b=$(jget "$T/chain8.json" 'p("'$pol'")["peak"]')
    run_to fit-$pol.json remat --json --budget "$b" $CB
    jcheck "budget = $pol's peak: at most $pol's extra compute" "$T/fit-$pol.json" \
        'd["fit"]["peak"] <= '"$b"' and d["fit"]["extra_flops"] <= '"$(jget "$T/chain8.json" 'p("'$pol'")["extra_flops"]')"
done
# A budget everything fits: the plan of least extra compute is no recompute.
run_to fit-big.json remat --json --budget 1G $CB
jcheck "budget 1G: feasible, peak <= budget, no extra compute" "$T/fit-big.json" \
    'd["fit"]["budget"] == 1073741824 and d["fit"]["feasible"] and
     d["fit"]["peak"] <= 1073741824 and d["fit"]["extra_flops"] == 0 and d["fit"]["candidates"] >= 1'
# Nothing fits one byte: exit 2, the smallest achievable peak named, nothing on stdout.
quiet 2 "" remat --budget 1 $CB
min_peak=$(grep -o '[0-9][0-9]*' "$T/q.err" | sort -n | tail -1)
min_peak=${min_peak:-1}
# Four budgets from that peak up to none's: the chosen plan always fits, the
# first exactly (the peak named is achievable), and the extra compute never
# grows with the budget; at none's peak nothing needs recomputing.
prev=""
for i in 0 1 2 3; do
    b=$((min_peak + (none_peak - min_peak) * i / 3))
    run_to "fit$i.json" remat --json --budget "$b" $CB
    jcheck "budget $b: fits" "$T/fit$i.json" 'd["fit"]["feasible"] and d["fit"]["peak"] <= '"$b"' and
        d["fit"]["min_peak"] == '"$min_peak"' and d["policies"][0]["peak"] == d["fit"]["peak"]'
    x=$(jget "$T/fit$i.json" 'd["fit"]["extra_flops"]')
    if [ -n "$prev" ] && [ "$x" -gt "$prev" ]; then bad "budget $b: extra FLOPs $x > $prev at a smaller budget"; else ok; fi
    prev=$x
done
jcheck "the least peak is achievable" "$T/fit0.json" 'd["fit"]["peak"] == '"$min_peak"
jcheck "budget = none's peak: no extra compute" "$T/fit3.json" 'd["fit"]["extra_flops"] == 0'
# One policy's candidates only.
run_to fit-sqrt.json remat --json --policy sqrt --budget 1G $CB
jcheck "--policy sqrt --budget: a sqrt plan" "$T/fit-sqrt.json" 'd["fit"]["policy"].startswith("sqrt")'
quiet 2 "$min_peak" remat --budget $((min_peak - 1)) $CB
# The chosen plan runs bit-identical and is the graph --graph-out writes.
b=$((min_peak + (none_peak - min_peak) / 2))
run_to fit-run.json remat --json --run --budget "$b" --graph-out "$T/fit.graph.json" $CB
jcheck "budget --run: bit-identical" "$T/fit-run.json" 'd["policies"][0]["identical"] is True'
run_to fit-graph.json graph --json "$T/fit.graph.json"
jcheck "budget --graph-out: the chosen plan's graph" "$T/fit-graph.json" \
    'd["nodes"] == '"$(jget "$T/fit-run.json" 'd["policies"][0]["nodes"]')"
expect 0 "bit-identical to the plain step" remat --run --budget "$b" $CB

# Sizes: powers of 1024 with K/M/G and KiB/MiB/GiB, of 1000 with KB/MB/GB,
# any case, decimals allowed down to whole bytes.
for s in 2GiB:2147483648 1.5G:1610612736 3000000:3000000 10MB:10000000 4m:4194304 \
         1.25gb:1250000000 1.5kib:1536 64KB:64000 512k:524288; do
    run_to budget.json remat --json --policy none --budget "${s%%:*}" $G/mlp.json
    jcheck "--budget ${s%%:*} = ${s#*:} bytes" "$T/budget.json" 'd["fit"]["budget"] == '"${s#*:}"
done
for s in abc -5 "" 1.5 12XB 1e9 0 1.G " 1G" 18446744073709551616 17179869184G; do
    quiet 2 "memplan remat: --budget '$s': " remat --budget "$s" $G/mlp.json
done

# ---- corpus convnets ----------------------------------------------------------------
for m in resnet18 alexnet; do
    run_to "$m.json" remat --json $C/$m.graph.json.gz
    jcheck "$m: a row per policy" "$T/$m.json" '[r["policy"] for r in d["policies"]] == "'"$POLICIES"'".split()'
    consistent "$m" "$T/$m.json"
    jcheck "$m: sqrt needs less than keeping everything" "$T/$m.json" 'p("sqrt")["peak"] < d["none_peak"]'
done
expect 0 "sqrt" remat --policy sqrt $C/squeezenet1_1.graph.json.gz
# --run at 224x224 takes minutes in a sanitized build: the corpus
# mobilenet_v3_small with its input scaled to 64x64 (every activation's H
# and W times 2/7: 112 -> 32, ..., 7 -> 2; global pools stay 1x1) is the
# same network, ops and schedule at 1/12 of the work.  (Not 32x32: batch
# norm over a single 1x1 value has a zero gradient, which would hide a wrong
# one.)
"$PY" - $C/mobilenet_v3_small.graph.json.gz "$T/mnv3-64.json" <<'EOF'
import gzip, json, sys
g = json.load(gzip.open(sys.argv[1]))
for t in g["tensors"]:
    if t["kind"] != "parameter" and len(t["shape"]) == 4 and t["shape"][2:] != [1, 1]:
        n, c, h, w = t["shape"]
        assert h * 2 % 7 == 0 and w * 2 % 7 == 0, t
        t["shape"] = [n, c, h * 2 // 7, w * 2 // 7]
        if t["alias_of"] is None:
            t["bytes"] = 4 * n * c * (h * 2 // 7) * (w * 2 // 7)
for nd in g["nodes"]:
    nd["attrs"].pop("flops", None)    # for 224x224: let the library estimate
json.dump(g, open(sys.argv[2], "w"))
EOF
run_to mnv3-none.json remat --json --policy none "$T/mnv3-64.json"
mnv3_none=$(jget "$T/mnv3-none.json" 'd["none_peak"]')
# One run per policy (optimal with a modelled limit of an eighth of the
# plain peak: the default searches that limit, which costs more time).
for pol in none sqrt cheap budget logn revolve "optimal=$((mnv3_none / 8))"; do
    run_to mnv3.json remat --json --run --policy "$pol" "$T/mnv3-64.json"
    jcheck "mobilenet_v3_small --run --policy $pol: bit-identical" "$T/mnv3.json" \
        'd["policies"][0]["identical"] is True'
    rows_consistent "mobilenet_v3_small --policy $pol" "$T/mnv3.json"
done

# ---- errors and usage: exit 2, the reason, nothing on stdout ---------------------------
quiet 2 "unknown policy 'nope'" remat --policy nope $G/mlp.json
quiet 2 "memplan remat: " remat --policy segments=1,999 $G/mlp.json
quiet 2 "999" remat --policy segments=1,999 $G/mlp.json
quiet 2 "memplan remat: " remat --policy segments=a,b $G/mlp.json
quiet 2 "memplan remat: " remat --policy segments= $G/mlp.json
quiet 2 "give the forward steps to keep" remat --policy segments $G/mlp.json
quiet 2 "memplan remat: " remat --policy logn=x $G/mlp.json
"$M" graph --train --graph-out "$T/mlp-train.json" $G/mlp.json >/dev/null 2>&1
quiet 2 "already" remat "$T/mlp-train.json"
quiet 2 "No such file or directory" remat no/such.json
quiet 2 "No such file or directory" remat --run no/such.json
quiet 2 "no kernel for op 'pack'" remat --run $G/alias_chain.json
quiet 2 "unknown strategy 'nope'" remat --strategy nope $G/mlp.json
quiet 2 "--seed needs a positive integer" remat --seed -1 $G/mlp.json
quiet 2 "--budget needs a value" remat $G/mlp.json --budget
quiet 2 "give one graph file" remat
quiet 2 "unexpected argument --frob" remat --frob $G/mlp.json
quiet 2 "memplan remat --help" remat --frob $G/mlp.json
quiet 2 "unexpected argument" remat $G/mlp.json $G/mlp.json
expect 0 "usage: memplan remat" remat --help
for pol in none segments sqrt cheap budget logn revolve optimal; do
    if "$M" remat --help | grep -q "^  $pol"; then ok; else bad "--help does not explain $pol"; fi
done
expect 0 "remat" --help

echo "cli-remat: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
