#!/bin/sh
# trace.sh MEMPLAN -- tests `memplan trace` through the real binary: exit
# codes, FILE:LINE: field messages for malformed traces, stats, period,
# records of one iteration (planned and checked by `memplan check`), SVG,
# and no partial output on a failed write.  Prints "cli-trace: N passed, N failed".
set -u
M=${1:?usage: trace.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh

# Malformed traces: exit 2 and the file:line: field message.
expect 2 "trace/empty.trace:1: empty file, expected the header '# memplan-trace/1'" trace stats trace/empty.trace
expect 2 "trace/noheader.trace:1: header: expected '# memplan-trace/1' as the first line" trace stats trace/noheader.trace
expect 2 "trace/version.trace:1: header: unsupported version 'memplan-trace/2'" trace period trace/version.trace
expect 2 "trace/kind.trace:3: field 'kind': unknown event 'q' (expected a, f, r, w or o)" trace stats trace/kind.trace
expect 2 "trace/size_text.trace:2: field 'size': 'ten' is not a non-negative integer" trace records trace/size_text.trace
expect 2 "trace/live.trace:3: field 'handle': 0x10 is already live (allocated on line 2)" trace stats trace/live.trace
expect 2 "trace/not_live.trace:2: field 'handle': 7 is not live" trace svg -o "$T/x.svg" trace/not_live.trace
expect 2 "trace/no_handle.trace:2: field 'handle': missing" trace stats trace/no_handle.trace
expect 2 "trace/long_line.trace:2: expected at most 4 fields for 'a', found 5" trace stats trace/long_line.trace
expect 2 "trace/size_zero.trace:2: field 'size': must be positive" trace stats trace/size_zero.trace
expect 2 "no/such.trace: No such file or directory" trace stats no/such.trace
# Bad usage.
expect 2 "unknown subcommand 'frob'" trace frob trace/loop.trace
expect 2 "give a subcommand and a trace file" trace
expect 2 "give one trace file" trace stats
expect 2 "give -o OUT.svg" trace svg trace/loop.trace
expect 2 "--max-edits needs a non-negative integer" trace period --max-edits x trace/loop.trace
expect 0 "usage: memplan trace stats" trace --help

# Stats, period, records.
expect 0 "peak live bytes          4396 (4.293 KiB) at event 3" trace stats trace/loop.trace
expect 0 '"events":25,"allocs":10,"frees":9,"reads":3,"writes":3,"bytes":5146,"peak_bytes":4396' trace stats --json trace/loop.trace
expect 0 "period                   8 events" trace period trace/loop.trace
expect 0 '"found":true,"period":8,"prefix":1,"iterations":3,"tail":0,"edits":0' trace period --json trace/loop.trace
expect 0 "0,0,3,100" trace records --iteration trace/loop.trace
expect 0 "9,22,23,50" trace records trace/loop.trace
expect 0 '"from":17,"to":25,"buffers":3,"lower_bound":300' trace records --json --iteration -o "$T/it.csv" trace/loop.trace
expect 0 "lower bound 300" plan -o "$T/plan.csv" "$T/it.csv"
expect 0 "valid: 3 buffers" check "$T/it.csv" "$T/plan.csv"
expect 2 "trace/noperiod.trace: no repeating iteration found" trace records --iteration trace/noperiod.trace
expect 0 "no period found" trace period trace/noperiod.trace
expect 0 "wrote $T/load.svg" trace svg -o "$T/load.svg" --title "a <b> & c" trace/loop.trace
if grep -q "a &lt;b&gt; &amp; c" "$T/load.svg" && grep -q "iteration 3 starts at event 25" "$T/load.svg" &&
    tail -1 "$T/load.svg" | grep -q "</svg>"; then ok; else bad "svg content"; fi
# A failed write leaves no file and exits 2.
expect 2 "$T/none/x.svg" trace svg -o "$T/none/x.svg" trace/loop.trace
expect 2 "$T/none/r.csv" trace records -o "$T/none/r.csv" trace/loop.trace
if [ -z "$(ls "$T/none" 2>/dev/null)" ]; then ok; else bad "partial output left"; fi

echo "cli-trace: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
