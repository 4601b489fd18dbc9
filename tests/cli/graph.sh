#!/bin/sh
# graph.sh MEMPLAN -- tests `memplan graph` through the real binary: the
# memory of each stage on a graph small enough to work out by hand
# (tests/graph/mlp.json), --train, --order search, --parallel-safe,
# --strategy, --run (executor output identical to the naive run),
# --graph-out (no partial file on failure), corpus graphs, and usage errors.
# Prints "cli-graph: N passed, N failed".
set -u
M=${1:?usage: graph.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh
G=../graph
C=../../bench/corpus

# mlp.json: x[4,8] (128 B) -> fc1 -> h1[4,16] (256) -> relu -> h2 (256) -> fc2 -> logits[4,3] (48).
# none: 128 + 256 + 256 + 48 = 688.  Live bytes per step: 384, 512, 304 -> bound 512.
# In place: relu writes h2 over h1 (its only reader) -> 128 + 256 + 48 = 432; the
# graph input x is never reused, and fc2 cannot write logits into h2 (they are
# live together), so sharing stays at 432.  After in-place the bound is
# max(128 + 256, 256 + 48) = 384 and a planner that reuses x's bytes for logits
# reaches it.
expect 0 '"stage":"none","footprint":688' graph --json $G/mlp.json
expect 0 '"lower_bound":512,"lower_bound_inplace":384' graph --json $G/mlp.json
expect 0 '"stage":"inplace","footprint":432,"inplace_ops":1' graph --json $G/mlp.json
expect 0 '"stage":"share","footprint":432' graph --json $G/mlp.json
expect 0 '"stage":"inplace+auto","footprint":384' graph --json $G/mlp.json
expect 0 '"stage":"inplace+greedy-size","footprint":384' graph --json --strategy greedy-size $G/mlp.json
expect 0 'in-place + greedy-size' graph --strategy greedy-size $G/mlp.json
expect 0 '"stage":"share-parallel-ancestor","footprint":432' graph --json --parallel-safe $G/mlp.json
expect 0 '"stage":"share-parallel-colour","footprint":432' graph --json --parallel-safe=colour $G/mlp.json
expect 0 'sharing, parallel-safe (ancestor)' graph --parallel-safe=ancestor $G/mlp.json
expect 0 '"order":{"mode":"search","given_peak":512,"searched_peak":512' graph --json --order search $G/mlp.json

# Training: the backward pass is added, every stage proven, the executor's
# outputs on the smallest plan equal the naive run's bit for bit.
expect 0 '"train":true,"backward":{"forward_nodes":4' graph --json --train $G/mlp.json
expect 0 'bit-identical to the naive run' graph --train --run $G/mlp.json
expect 0 '"identical":true' graph --json --train --run --order search --seed 7 $G/mlp.json
expect 0 'bit-identical to the naive run' graph --run $G/mlp.json
expect 0 'graph' graph --train --graph-out "$T/mlp-train.json" $G/mlp.json
expect 0 '"train":false' graph --json "$T/mlp-train.json"
expect 0 'bit-identical' graph --run "$T/mlp-train.json"
expect 0 'graph' graph --train --graph-out "$T/mlp-train.json.gz" $G/mlp.json
expect 0 '"stage":"none"' graph --json "$T/mlp-train.json.gz"
expect 2 "No such file or directory" graph --train --graph-out "$T/no/dir/x.json" $G/mlp.json
if [ -e "$T/no/dir/x.json" ]; then bad "a failed --graph-out left a file"; else ok; fi
expect 2 "already" graph --train "$T/mlp-train.json"

# Corpus graphs: every stage and both orders on a forward and a training graph.
expect 0 '"valid":true' graph --json --parallel-safe --strategy all $C/inference/squeezenet1_1.graph.json.gz
expect 0 '"mode":"search"' graph --json --train --order search --parallel-safe $C/inference/squeezenet1_1.graph.json.gz
expect 0 'sharing (counter, with in-place)' graph --order search $C/train/mobilenet_v2-b16.graph.json.gz

# Shapes are checked against the op registry before anything else.
expect 0 '"shapes_checked":3,"shapes_unchecked":0' graph --json $G/mlp.json
expect 2 "shape_mismatch.json: node 2 'fc2' (nn.Linear): output 'logits' is float32 [4,5] in the graph, but linear gives float32 [4,3]" graph $G/shape_mismatch.json

# Errors and usage.
expect 2 "node 0 'pack': no kernel for op 'pack'" graph --run $G/alias_chain.json
expect 2 "node 2 'relu' (aten::relu): output 'b' is float16 [4] in the graph, but relu gives float32 [4]" graph $G/small.json
expect 2 "No such file or directory" graph no/such.json
expect 2 "unknown --order value 'sideways' (one of: 'given', 'search')" graph --order sideways $G/mlp.json
expect 2 "unknown --parallel-safe value 'x' (one of: 'ancestor', 'colour', 'both')" graph --parallel-safe=x $G/mlp.json
expect 2 "unknown strategy 'nope'" graph --strategy nope $G/mlp.json
expect 2 "--seed needs a positive integer" graph --seed -1 $G/mlp.json
expect 2 "give one graph file" graph
expect 2 "unexpected argument" graph --frob $G/mlp.json
expect 0 "usage: memplan graph" graph --help
expect 2 "tensors[2].bytes: 12, but 4 elements of float32 take 16" graph $G/bad/bytes_mismatch.json

echo "cli-graph: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
