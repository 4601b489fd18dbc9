#!/bin/sh
# tests/fixed/cli_anytime_fixed.sh MEMPLAN DSA -- `memplan plan --time-limit`
# and `--strategy exact` on records with fixed offsets, through the real
# binary: the plan keeps every fixed buffer at its offset and passes
# `memplan check`, its footprint is at most auto's plan without the limit,
# and the statement at the end is the one expected (a proof where the bound
# is met, else a proven gap).
set -u
bin=$1 dsa=$2
. "$(dirname "$0")/../cli/lib.sh" # $T, ok, bad, the counters
tmp=$T
fail() { bad "$@"; }
# footprint of auto's row in the table of `memplan plan`
auto_fp() { awk '$1 == "auto" && $2 == "->" { print $4 }' "$1"; }
# every fixed offset of RECORDS (offset column, last) found in PLAN (id,offset,...)
kept() {
    awk -F, 'NR == FNR { if (FNR > 1) at[$1] = $2; next }
             FNR > 1 && $NF != "" && at[$1] != $NF { bad = 1; print "moved: " $1 " " at[$1] " " $NF }
             END { exit bad }' "$2" "$1"
}

# every fixed offset of RECORDS (its offset column, and its pool column or,
# empty or absent, the first pool FIRST) found in the pool PLAN
# (id,offset,size,pool) in that pool
kept_pools() {
    awk -F, -v first="$3" 'NR == FNR { if (FNR > 1) { at[$1] = $2; pool[$1] = $4 }; next }
             FNR == 1 { for (k = 1; k <= NF; k++) { if ($k == "offset") o = k; if ($k == "pool") q = k }; next }
             $o != "" {
                 want = q && $q != "" ? $q : first
                 if (at[$1] != $o || pool[$1] != want) { bad = 1; print "moved: " $1 }
             }
             END { exit bad }' "$2" "$1"
}

# Buffers 1 and 3 are fixed at 0 and 128; 2 and 4 live at time 3 with
# both and cannot use the 16 bytes between them, so they go above 192:
# 272 is optimal and the search proves it (the load bound is 256).
printf 'id,lower,upper,size,alignment,offset\n1,0,4,100,16,0\n2,2,6,50,1,\n3,3,9,64,64,128\n4,1,8,30,1,\n5,5,9,80,1,\n' > "$tmp/f.csv"
"$bin" plan --time-limit 2 "$tmp/f.csv" -o "$tmp/p.csv" >"$tmp/out" 2>"$tmp/err" || fail "exit $? on f.csv"
grep -qx "auto --time-limit: optimal (proven), lower bound 272; heuristics alone 272 (.*); .* s" "$tmp/out" ||
    fail "no proof of 272: $(cat "$tmp/out")"
grep -q "^memplan: .* s  footprint 272  lower bound 272  gap 0.000%" "$tmp/err" || fail "no progress line: $(cat "$tmp/err")"
kept "$tmp/f.csv" "$tmp/p.csv" || fail "f.csv: a fixed buffer moved"
"$bin" check "$tmp/f.csv" "$tmp/p.csv" | grep -q "^valid: 5 buffers, footprint 272" || fail "f.csv: plan not valid"
# --strategy exact on the same records: the same proof, without a time limit.
"$bin" plan --strategy exact "$tmp/f.csv" -o "$tmp/x.csv" >"$tmp/out" 2>"$tmp/err" || fail "exact: exit $? on f.csv"
grep -qx "exact: optimal (proven), lower bound 272" "$tmp/out" || fail "exact: no proof of 272: $(cat "$tmp/out")"
kept "$tmp/f.csv" "$tmp/x.csv" || fail "exact f.csv: a fixed buffer moved"
"$bin" check "$tmp/f.csv" "$tmp/x.csv" | grep -q "^valid: 5 buffers, footprint 272" || fail "exact f.csv: plan not valid"

# --strategy exact with pools: 1 and 3 fixed in fast (200 bytes), 5 in
# dram at 16.  Fast's search puts 2 and 4 above 192 (the hole between 1
# and 3 is 16 bytes), beyond its capacity, so they go to dram, where they
# cannot use the 16 bytes below 5 either: 5 ends at 96, 2 and 4 stack
# above it to 176, above dram's load 160 -- proven by dram's search.
printf 'id,lower,upper,size,alignment,offset,pool\n1,0,4,100,16,0,fast\n2,2,6,50,1,,\n3,3,9,64,64,128,fast\n4,1,8,30,1,,\n5,5,9,80,1,16,dram\n' > "$tmp/g.csv"
"$bin" plan --strategy exact --pools fast:200,dram "$tmp/g.csv" -o "$tmp/gp.csv" >"$tmp/out" 2>"$tmp/err" ||
    fail "exact pools: exit $? on g.csv: $(cat "$tmp/err")"
grep -q "valid: yes" "$tmp/out" || fail "exact pools: $(cat "$tmp/out")"
grep -qx "pool fast exact: optimal (proven), lower bound 192 for its buffers; .* s" "$tmp/out" ||
    fail "exact pools: fast: $(cat "$tmp/out")"
grep -qx "pool dram exact: optimal (proven), lower bound 176 for its buffers; .* s" "$tmp/out" ||
    fail "exact pools: dram: $(cat "$tmp/out")"
kept_pools "$tmp/g.csv" "$tmp/gp.csv" fast || fail "exact pools: a fixed buffer moved"
"$bin" check --pools fast:200,dram "$tmp/g.csv" "$tmp/gp.csv" |
    grep -qx "valid: 5 buffers in 2 pools, each within its capacity" || fail "exact pools: plan not valid"
"$bin" plan --strategy exact --pools fast:200,dram --json "$tmp/g.csv" |
    grep -q '"proofs":\[{"pool":"fast","status":"optimal","footprint":192,"lower_bound":192,' ||
    fail "exact pools: no JSON proofs"

# A fixed buffer far above the rest: no plan ends below it (2000 + 100),
# so its end is the bound and the plan meets it at once.
printf 'id,first,last,size,offset\n1,0,4,100,2000\n2,0,4,300,\n3,2,6,500,\n' > "$tmp/h.csv"
"$bin" plan --time-limit 2 "$tmp/h.csv" -o "$tmp/hp.csv" >"$tmp/out" 2>&1 || fail "exit $? on h.csv"
grep -q "auto --time-limit: optimal (proven), lower bound 2100;" "$tmp/out" || fail "h.csv: $(cat "$tmp/out")"
kept "$tmp/h.csv" "$tmp/hp.csv" || fail "h.csv: a fixed buffer moved"
"$bin" plan --strategy exact "$tmp/h.csv" -o "$tmp/hx.csv" >"$tmp/out" 2>&1 || fail "exact: exit $? on h.csv"
grep -qx "exact: optimal (proven), lower bound 2100" "$tmp/out" || fail "exact h.csv: $(cat "$tmp/out")"
kept "$tmp/h.csv" "$tmp/hx.csv" || fail "exact h.csv: a fixed buffer moved"

# MiniMalloc's A with every tenth buffer fixed where auto put it: the
# search improves on auto's plan around them within a second or ends
# with a proof; never worse, fixed buffers kept, checked.
a=$dsa/minimalloc/challenging/A.1048576.csv
if [ -f "$a" ]; then
    "$bin" plan "$a" -o "$tmp/a.csv" >/dev/null || fail "plan A"
    awk -F, 'NR == FNR { if (FNR > 1) at[$1] = $2; next }
             FNR == 1 { print $0 ",offset"; next }
             { print $0 "," (FNR % 10 == 0 ? at[$1] : "") }' "$tmp/a.csv" "$a" > "$tmp/afix.csv"
    "$bin" plan "$tmp/afix.csv" > "$tmp/plain" || fail "plan A fixed"
    "$bin" plan --time-limit 1 "$tmp/afix.csv" -o "$tmp/ap.csv" >"$tmp/out" 2>"$tmp/err" || fail "exit $? on A fixed"
    p=$(auto_fp "$tmp/plain") t=$(auto_fp "$tmp/out")
    [ -n "$p" ] && [ -n "$t" ] && [ "$t" -le "$p" ] || fail "A fixed: $t above $p without the limit"
    grep -q "^auto --time-limit: \(optimal (proven)\|gap\), lower bound [0-9]*; heuristics alone $p " "$tmp/out" ||
        fail "A fixed: $(cat "$tmp/out")"
    grep -q "^auto --time-limit: optimal" "$tmp/out" ||
        grep -q "^proven gap: .*% above the lower bound (time ran out)" "$tmp/out" || fail "A fixed: no gap stated"
    kept "$tmp/afix.csv" "$tmp/ap.csv" || fail "A fixed: a fixed buffer moved"
    "$bin" check "$tmp/afix.csv" "$tmp/ap.csv" | grep -q "^valid: 154 buffers, footprint $t," || fail "A fixed: not valid"
    # --strategy exact for a second: never above auto's plan, a proof or a gap
    MEMPLAN_EXACT_TIME=1 "$bin" plan --strategy exact "$tmp/afix.csv" -o "$tmp/ax.csv" >"$tmp/out" 2>"$tmp/err" ||
        fail "exact: exit $? on A fixed"
    x=$(awk '$1 == "exact" { print $2; exit }' "$tmp/out")
    [ -n "$x" ] && [ "$x" -le "$p" ] || fail "exact A fixed: $x above auto's $p"
    grep -q "^exact: \(optimal (proven)\|gap\), lower bound [0-9]*" "$tmp/out" || fail "exact A fixed: $(cat "$tmp/out")"
    kept "$tmp/afix.csv" "$tmp/ax.csv" || fail "exact A fixed: a fixed buffer moved"
    "$bin" check "$tmp/afix.csv" "$tmp/ax.csv" | grep -q "^valid: 154 buffers, footprint $x," || fail "exact A fixed: not valid"
    # --strategy exact with pools, a second per pool: fast (1 200 000 bytes,
    # above every fixed end) keeps its fixed buffers, dram takes the rest
    MEMPLAN_EXACT_TIME=1 "$bin" plan --strategy exact --pools fast:1200000,dram "$tmp/afix.csv" \
        -o "$tmp/axp.csv" >"$tmp/out" 2>"$tmp/err" || fail "exact pools: exit $? on A fixed"
    for pool in fast dram; do
        grep -q "^pool $pool exact: \(optimal (proven)\|gap\), lower bound [0-9]* for its buffers" "$tmp/out" ||
            fail "exact pools A fixed: $pool: $(cat "$tmp/out")"
    done
    kept_pools "$tmp/afix.csv" "$tmp/axp.csv" fast || fail "exact pools A fixed: a fixed buffer moved"
    "$bin" check --pools fast:1200000,dram "$tmp/afix.csv" "$tmp/axp.csv" |
        grep -qx "valid: 154 buffers in 2 pools, each within its capacity" || fail "exact pools A fixed: not valid"
else
    echo "skipped the hard-set case: $dsa not found"
fi

echo "cli_anytime_fixed: $fail failed"
[ "$fail" -eq 0 ]
