#!/bin/sh
# outputs.sh MEMPLAN -- outputs that never lose data, through the real
# binary: an output that is an input (also through a symbolic or a hard
# link) or another output is refused before any work; symbolic links are
# written through; FIFOs, character devices and "-" are written directly;
# ENOSPC and directory targets exit 2 with their message; a replaced file
# keeps its permission bits and no temporary file is left behind.  And the
# readers: NUL bytes, byte order marks, directories, truncated gzip.
# Prints "cli-outputs: N passed, N failed".
set -u
M=${1:?usage: outputs.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh

# Every file this script may overwrite is a copy in $T.
cp good/chain.csv trace/loop.trace ../graph/mlp.json "$T/"
C=$T/chain.csv
refuse="refusing to overwrite an input"
same_bytes() { if cmp -s "$1" "$2"; then ok; else bad "$3"; fi; }

# ---- an output that is an input, or another output: exit 2 before any work
expect 2 "memplan: -o $C: is the input file $C; $refuse" plan -o "$C" "$C"
same_bytes "$C" good/chain.csv "plan -o INPUT changed the input"
ln -s chain.csv "$T/link.csv"
expect 2 "memplan: -o $T/link.csv: is the input file $C; $refuse" plan -o "$T/link.csv" "$C"
expect 2 "memplan: -o $C: is the input file $T/link.csv; $refuse" plan -o "$C" "$T/link.csv"
ln "$C" "$T/hard.svg"
expect 2 "memplan: --svg $T/hard.svg: is the input file $C; $refuse" plan --svg "$T/hard.svg" "$C"
expect 2 "memplan: -o $C: is the input file $C; $refuse" plan -o "$C" --model "$C"
same_bytes "$C" good/chain.csv "an input changed"
expect 2 "memplan: --svg $T/./p.svg: is the same file as -o $T/p.svg; refusing to write one file twice" \
    plan -o "$T/p.svg" --svg "$T/./p.svg" "$C"
expect 2 "memplan: --svg -: is the same file as -o -; refusing to write one file twice" \
    plan -o - --svg - "$C"
if [ ! -e "$T/p.svg" ]; then ok; else bad "a refused command wrote its output"; fi
expect 2 "memplan: -o $T/loop.trace: is the input file $T/loop.trace; $refuse" \
    trace records -o "$T/loop.trace" "$T/loop.trace"
ln -s loop.trace "$T/loop.svg"
expect 2 "memplan: -o $T/loop.svg: is the input file $T/loop.trace; $refuse" \
    trace svg -o "$T/loop.svg" "$T/loop.trace"
expect 2 "memplan: --graph-out $T/mlp.json: is the input file $T/mlp.json; $refuse" \
    graph --graph-out "$T/mlp.json" "$T/mlp.json"
expect 2 "memplan: --records-out $T/mlp.json: is the input file $T/mlp.json; $refuse" \
    graph --records-out "$T/mlp.json" "$T/mlp.json"
expect 2 "memplan: --graph-out $T/g.json: is the same file as --records-out $T/g.json; refusing to write one file twice" \
    graph --records-out "$T/g.json" --graph-out "$T/g.json" "$T/mlp.json"
expect 2 "memplan: --graph-out $T/mlp.json: is the input file $T/mlp.json; $refuse" \
    remat --policy none --graph-out "$T/mlp.json" "$T/mlp.json"
same_bytes "$T/mlp.json" ../graph/mlp.json "graph --graph-out INPUT changed the input"
same_bytes "$T/loop.trace" trace/loop.trace "trace -o INPUT changed the input"

# ---- regular files: replaced whole, permission bits kept
expect 0 "best: auto" plan -o "$T/plan.csv" "$C"
echo old > "$T/mode.csv"
chmod 640 "$T/mode.csv"
expect 0 "best: auto" plan -o "$T/mode.csv" "$C"
same_bytes "$T/mode.csv" "$T/plan.csv" "plan -o over an existing file"
if [ "$(stat -c %a "$T/mode.csv")" = 640 ]; then ok; else bad "mode 640 not kept"; fi

# ---- symbolic links: written through, the link stays a link
echo old > "$T/target.csv"
chmod 604 "$T/target.csv"
ln -s target.csv "$T/out-link.csv"
expect 0 "best: auto" plan -o "$T/out-link.csv" "$C"
if [ -L "$T/out-link.csv" ]; then ok; else bad "the symbolic link was replaced"; fi
same_bytes "$T/target.csv" "$T/plan.csv" "the link's target did not get the plan"
if [ "$(stat -c %a "$T/target.csv")" = 604 ]; then ok; else bad "target mode not kept"; fi
mkdir "$T/sub"
ln -s ../target.csv "$T/sub/rel-link.csv"
ln -s sub/rel-link.csv "$T/chain-link.csv"
expect 0 "wrote 10 records" trace records -o "$T/chain-link.csv" "$T/loop.trace"
if [ -L "$T/chain-link.csv" ] && [ -L "$T/sub/rel-link.csv" ] && head -1 "$T/target.csv" |
    grep -q '^id,first,last,size$'; then ok; else bad "a chain of relative links"; fi
ln -s new.csv "$T/dangling.csv"
expect 0 "best: auto" plan -o "$T/dangling.csv" "$C"
if [ -L "$T/dangling.csv" ]; then ok; else bad "the dangling link was replaced"; fi
same_bytes "$T/new.csv" "$T/plan.csv" "a dangling link's target was not created"

# ---- FIFOs: written directly, a reader gets everything
mkfifo "$T/fifo"
timeout 30 cat "$T/fifo" > "$T/fifo.out" &
reader=$!
expect 0 "best: auto" plan -o "$T/fifo" "$C"
wait $reader
same_bytes "$T/fifo.out" "$T/plan.csv" "the FIFO's reader did not get the plan"
if [ -p "$T/fifo" ]; then ok; else bad "the FIFO was replaced"; fi
timeout 30 cat "$T/fifo" > "$T/fifo.json" &
reader=$!
expect 0 "" graph --graph-out "$T/fifo" "$T/mlp.json"
wait $reader
expect 0 "graph          $T/fifo.json" graph "$T/fifo.json"

# ---- "-": standard output carries the file alone
"$M" plan -o - "$C" > "$T/stdout.csv"
same_bytes "$T/stdout.csv" "$T/plan.csv" "plan -o - is not the plan alone"
"$M" plan --svg - --json "$C" > "$T/stdout.svg"
if head -c 5 "$T/stdout.svg" | grep -q '^<svg\|^<?xml' && tail -1 "$T/stdout.svg" | grep -q '</svg>'
then ok; else bad "plan --svg - is not the SVG alone"; fi
"$M" trace records -o - "$T/loop.trace" > "$T/stdout-records.csv"
"$M" trace records "$T/loop.trace" > "$T/records.csv"
same_bytes "$T/stdout-records.csv" "$T/records.csv" "trace records -o - is not the records alone"
"$M" graph --graph-out - "$T/mlp.json" > "$T/stdout.json"
expect 0 "graph          $T/stdout.json" graph "$T/stdout.json"

# ---- directories are refused as outputs
mkdir "$T/dir"
expect 2 "memplan: $T/dir: is a directory" plan -o "$T/dir" "$C"
expect 2 "memplan: $T/dir: is a directory" graph --graph-out "$T/dir" "$T/mlp.json"
expect 2 "memplan: $T/dir: is a directory" trace records -o "$T/dir" "$T/loop.trace"
if [ -d "$T/dir" ] && [ -z "$(ls "$T/dir")" ]; then ok; else bad "the directory was touched"; fi

# ---- character devices: written directly; ENOSPC exits 2 with its message.
# As root, private device nodes in $T stand in for /dev/null and /dev/full,
# so that a broken writer could only ever replace those; elsewhere the
# system's nodes are used (a user cannot replace them).
null=/dev/null full=/dev/full
if mknod -m 666 "$T/null" c 1 3 2>/dev/null && mknod -m 666 "$T/full" c 1 7 2>/dev/null &&
    (printf x > "$T/null") 2>/dev/null; then null=$T/null full=$T/full; fi
enospc="$full: write failed: No space left on device"
expect 0 "best: auto" plan -o "$null" "$C"
expect 2 "memplan: $enospc" plan -o "$full" "$C"
expect 2 "memplan: $enospc" graph --graph-out "$full" "$T/mlp.json"
ln -s "$full" "$T/full.json.gz"
expect 2 "memplan: $T/full.json.gz: write failed: No space left on device" \
    graph --graph-out "$T/full.json.gz" "$T/mlp.json"
expect 2 "memplan: $enospc" trace svg -o "$full" "$T/loop.trace"
expect 2 "memplan remat: $enospc" remat --policy none --svg "$full" "$T/mlp.json"
out=$("$M" plan -o - "$C" 2>&1 > "$full")
rc=$?
if [ $rc -eq 2 ] && [ "$out" = "memplan: standard output: write failed: No space left on device" ]
then ok; else bad "plan -o - > $full: exit $rc: $out"; fi
if [ -c "$null" ] && [ -c "$full" ] && [ -c /dev/null ] && [ -c /dev/full ]; then ok
else bad "a device node was replaced"; fi
# The system's /dev/full itself, once the private node has proven it safe.
if [ "$full" != /dev/full ] && [ -c "$full" ] && [ -c /dev/full ]; then
    expect 2 "memplan: /dev/full: write failed: No space left on device" plan -o /dev/full "$C"
    if [ -c /dev/full ]; then ok; else bad "/dev/full was replaced"; fi
fi

# ---- readers: a NUL byte is an error naming file, line and field
printf 'id,first,last,size\n0,0,1,1\00000\n' > "$T/nul.csv"
expect 2 "memplan: $T/nul.csv:2: field 'size': contains a NUL byte" plan "$T/nul.csv"
printf 'id,fi\000rst,last,size\n0,0,1,1\n' > "$T/nul-header.csv"
expect 2 "memplan: $T/nul-header.csv:1: header: column 2 contains a NUL byte" bounds "$T/nul-header.csv"
printf 'id,offset,size\n0,2\00000,100\n1,0,200\n2,0,100\n' > "$T/nul-plan.csv"
expect 2 "memplan: $T/nul-plan.csv:2: field 'offset': contains a NUL byte" check "$C" "$T/nul-plan.csv"
printf '# memplan-trace/1\na 0x10 16\000 5\nf 0x10\n' > "$T/nul.trace"
expect 2 "memplan: $T/nul.trace:2: field 'size': contains a NUL byte" trace stats "$T/nul.trace"

# ---- a UTF-8 byte order mark opening a file is skipped
bom=$(printf '\357\273\277')
{ printf '%s' "$bom"; cat "$C"; } > "$T/bom.csv"
expect 0 "best: auto" plan "$T/bom.csv"
{ printf '%s' "$bom"; cat "$T/plan.csv"; } > "$T/bom-plan.csv"
expect 0 "valid" check "$T/bom.csv" "$T/bom-plan.csv"
{ printf '%s' "$bom"; cat "$T/loop.trace"; } > "$T/bom.trace"
expect 0 "peak live bytes          4396" trace stats "$T/bom.trace"
{ printf '%s' "$bom"; cat "$T/mlp.json"; } > "$T/bom.json"
expect 0 "graph          $T/bom.json (mlp)" graph "$T/bom.json"
expect 2 "this is a memplan-trace/1 trace, not a records CSV" plan "$T/bom.trace"

# ---- a directory as input says so
expect 2 "memplan: $T/dir: is a directory" plan "$T/dir"
expect 2 "memplan: $T/dir: is a directory" check "$T/dir" "$T/plan.csv"
expect 2 "memplan: $T/dir: is a directory" check "$C" "$T/dir"
expect 2 "memplan: $T/dir: is a directory" trace stats "$T/dir"
expect 2 "memplan: $T/dir: is a directory" graph "$T/dir"
expect 2 "memplan remat: $T/dir: is a directory" remat "$T/dir"

# ---- a truncated .json.gz says so, not a JSON syntax error
gzip -c "$T/mlp.json" > "$T/whole.json.gz"
head -c 300 "$T/whole.json.gz" > "$T/cut.json.gz"
expect 0 "graph          $T/whole.json.gz (mlp)" graph "$T/whole.json.gz"
expect 2 "memplan: $T/cut.json.gz: the gzip stream is truncated (the file ends inside the compressed data)" \
    graph "$T/cut.json.gz"

# ---- no temporary file is left anywhere
if [ -z "$(find "$T" -name '*.tmp.*')" ]; then ok; else bad "temporary files left: $(find "$T" -name '*.tmp.*')"; fi

echo "cli-outputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
