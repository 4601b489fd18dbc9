#!/bin/sh
# report.sh MEMPLAN -- `memplan report` and the plan SVG titles through the
# real binary: usage errors, inputs of the wrong kind or malformed, outputs
# refused or failing (nothing left behind), the page for a records file, a
# graph and a trace, and names from the input escaped everywhere (a tensor
# named "</script><script>alert(...)" must never reach the page as markup).
# Prints "report-cli: N passed, N failed".
set -u
M=$(cd "$(dirname "${1:?usage: report.sh path/to/memplan}")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../cli"
. ./lib.sh
R=../report
has() { if grep -q -- "$2" "$1"; then ok; else bad "$1 lacks '$2'"; fi; }
hasnt() { if grep -q -- "$2" "$1"; then bad "$1 has '$2'"; else ok; fi; }

# Usage and help.
expect 0 "usage: memplan report" report --help
expect 0 "usage: memplan report" help report
expect 0 "report      one HTML page" help
expect 2 "give one input file (records CSV, graph or trace)" report -o "$T/a.html"
expect 2 "give -o PAGE.html" report good/chain.csv
expect 2 "unknown or incomplete option --frob" report --frob -o "$T/a.html" good/chain.csv
expect 2 "more than one input: good/chain.csv" report -o "$T/a.html" good/chain.csv good/chain.csv
expect 2 "-o $T/a.png: the page is HTML; name the file .html" report -o "$T/a.png" good/chain.csv
expect 2 "--train and --include-persistent are for graphs; good/chain.csv is not" report --train -o "$T/a.html" good/chain.csv
# Inputs: missing, malformed (file:line: field), of another kind.
expect 2 "no/such.csv: No such file or directory" report -o "$T/a.html" no/such.csv
expect 2 "bad/size_text.csv:2: field 'size'" report -o "$T/a.html" bad/size_text.csv
expect 2 "trace/kind.trace:3: field 'kind': unknown event 'q'" report -o "$T/a.html" trace/kind.trace
expect 2 "shape_mismatch.json" report -o "$T/a.html" ../graph/shape_mismatch.json
expect 2 "this is a plan CSV, not a records CSV" report -o "$T/a.html" good/chain_plan.csv
cp good/chain.csv "$T/in.html"
expect 2 "-o $T/in.html: is the input file $T/in.html" report -o "$T/in.html" "$T/in.html"
if [ ! -e "$T/a.html" ]; then ok; else bad "a failed report left $T/a.html"; fi
# A write that fails: exit 2, no file, no temporary left.
mkdir "$T/none"
chmod 500 "$T/none"
if [ "$(id -u)" -ne 0 ]; then
    expect 2 "$T/none/a.html" report -o "$T/none/a.html" good/chain.csv
    if [ -z "$(ls -A "$T/none")" ]; then ok; else bad "partial output in $T/none"; fi
fi
expect 2 "$T/missing/a.html" report -o "$T/missing/a.html" good/chain.csv

# A records file: one row per strategy, the best marked, ratios to the
# bound of each kind, the plan data and the peak list.
expect 0 "wrote $T/chain.html" report -o "$T/chain.html" good/chain.csv
P="$T/chain.html"
has "$P" "<h1 id=\"title\">chain</h1>"
n=$(grep -c '<tr class="row' "$P")
k=$("$M" strategies | tail -n +2 | grep -c '^[a-z]')
if [ "$n" -eq "$k" ]; then ok; else bad "chain: $n table rows for $k strategies"; fi
if [ "$(grep -c '<tr class="row best' "$P")" -eq 1 ]; then ok; else bad "chain: not one best row"; fi
has "$P" '<td class="num ratio">1.000</td>'
has "$P" '(objects)</td>'
has "$P" 'id="peak-list"'
has "$P" '<script id="mp-data" type="application/json">'
has "$P" "data-errors"
# Standard output: the page alone.
out=$("$M" report -o - good/chain.csv 2>&1)
case $out in "<!DOCTYPE html>"*"</html>") ok ;; *) bad "report -o - is not the page alone" ;; esac
expect 0 "wrote $T/titled.html" report --title "My <net>" -o "$T/titled.html" good/chain.csv
has "$T/titled.html" "<h1 id=\"title\">My &lt;net&gt;</h1>"

# A trace: statistics, period, the blocks live at the peak by handle.
expect 0 "wrote $T/loop.html" report -o "$T/loop.html" trace/loop.trace
has "$T/loop.html" "<dt>period</dt><dd>8 events, warm-up 1, 3 iterations, 0 edits</dd>"
has "$T/loop.html" "Live at the peak: 4.293 KiB at event 3"
has "$T/loop.html" '<tr class="peak-row"><td>0x1000</td><td class="num">4.000 KiB</td>'

# A training graph with hostile names: escaped in the HTML (text and
# attributes) and in the JSON data (no '<' at all inside the script).
expect 0 "wrote $T/evil.html" report --train -o "$T/evil.html" $R/evil.json
E="$T/evil.html"
has "$E" "<h1 id=\"title\">mlp &lt;b&gt;&quot;bold&quot;&lt;/b&gt; &amp; co, training</h1>"
has "$E" "<td>h2&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&apos;q&apos;</td>"
has "$E" '"h2\\u003c/script\\u003e\\u003cscript\\u003ealert(\\"x\\")\\u003c/script\\u003e'"'q'"'"'
hasnt "$E" "alert(\"x\")</script>"
hasnt "$E" "<b>"
if [ "$(grep -c '<script' "$E")" -eq 3 ]; then ok; else bad "evil: not exactly 3 script elements"; fi
has "$E" "<dt>backward</dt>"
has "$E" "order search + in-place + auto"
has "$E" "<th>stage</th>"
# --train: recomputation policies and AutoSwap on the training graph.
if [ "$(grep -c '<tr class="train-row"><td>recompute: ' "$E")" -eq 4 ]; then ok; else bad "evil: 4 recompute rows"; fi
has "$E" '<tr class="train-row"><td>recompute: none</td><td class="num">692 B</td><td class="num">1.000</td>'
has "$E" '<tr class="train-row"><td>swap: AutoSwap, no overhead</td>'
# Without --train no training table; a graph's 'exact' row says why it is skipped.
expect 0 "wrote $T/small.html" report -o "$T/small.html" ../graph/views.json
hasnt "$T/small.html" 'id="training"'

# Plan SVGs: titled by the file's name or --title; the bound of the plan's kind.
expect 0 "best:" plan --svg "$T/p.svg" good/chain.csv
has "$T/p.svg" "font-weight=\"bold\">chain "
has "$T/p.svg" ">lower bound (offsets) "
hasnt "$T/p.svg" "good/chain"
expect 0 "best:" plan --strategy objects-greedy-size --title "A & B" --svg "$T/o.svg" good/chain.csv
has "$T/o.svg" ">lower bound (objects) "
has "$T/o.svg" "font-weight=\"bold\">A &amp; B "

# remat --svg: tensor names in tooltips and on the largest buffers.
expect 0 "" remat --policy sqrt --svg "$T/r.svg" ../graph/mlp.json
has "$T/r.svg" "<title>h2, id "
has "$T/r.svg" '">x ('
has "$T/r.svg" ">lower bound (offsets, in-place) "

echo "report-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
