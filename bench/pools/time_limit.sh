#!/bin/sh
# bench/pools/time_limit.sh MEMPLAN DIR [SPEC] [SECONDS] -- `memplan plan
# --pools SPEC` on every records CSV in DIR, without and with --time-limit
# SECONDS: per instance, the bytes the first pool holds and each pool's
# footprint, both ways, and the time taken.  Run alone (it measures how
# much the anytime search gets done in its time).  docs/exact.md, "Pools".
set -eu
bin=$1 dir=$2 spec=${3:-fast:512KiB,dram} secs=${4:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
first=${spec%%[:,]*}
row() { # bytes in the first pool, then the footprints from the table
    awk -F, -v p="$first" 'NR > 1 && $4 == p { s += $3 } END { printf "%d", s }' "$tmp/p.csv"
    awk '/^pool / { t = 1; next } t && NF >= 4 && $1 != "" { printf " %s", $(NF - 2) } /^$/ && t { t = 0 }' "$tmp/t.txt"
}
printf '%-6s %12s %22s %8s   %12s %22s %8s\n' instance "bytes(1st)" "footprints" s \
    "bytes(1st)" "footprints (limit)" s
for f in "$dir"/*.csv; do
    s0=$(date +%s.%N)
    "$bin" plan --pools "$spec" "$f" -o "$tmp/p.csv" > "$tmp/t.txt"
    s1=$(date +%s.%N)
    a=$(row)
    "$bin" plan --pools "$spec" --time-limit "$secs" "$f" -o "$tmp/p.csv" > "$tmp/t.txt" 2>/dev/null
    s2=$(date +%s.%N)
    b=$(row)
    set -- $a
    ab=$1; shift; af="$*"
    set -- $b
    bb=$1; shift; bf="$*"
    printf '%-6s %12s %22s %8.2f   %12s %22s %8.2f\n' "$(basename "$f" | cut -d. -f1)" "$ab" "$af" \
        "$(echo "$s1 - $s0" | bc)" "$bb" "$bf" "$(echo "$s2 - $s1" | bc)"
done
