#!/bin/sh
# tests/test_preload.sh SO PROG [MEMPLAN] -- libmemplan-preload.so under real
# programs.
#
# SO is the built libmemplan-preload.so, PROG the test program built from
# tests/preload/prog.c, MEMPLAN the CLI (default: memplan beside SO), which
# reads back the traces written under MEMPLAN_TRACE.  Each case runs a
# program without LD_PRELOAD and with it (and with MEMPLAN_DISABLE=1) and
# requires the same output and exit status; under MEMPLAN_SUMMARY=1 / MEMPLAN_STATS it also requires that blocks
# were served from the arena (replay happened), that the registry saw
# 0 overlaps (MEMPLAN_VERIFY=1), and that glibc's cache was trimmed when
# replay started (none with MEMPLAN_TRIM=0).  The programs: PROG (canaries, realloc,
# calloc, alignments, threads, fork), Python with a small script and with
# everything through the arena (MEMPLAN_THRESHOLD=1), and a torchvision
# resnet18 inference loop (Debian's /usr/bin/python3 and python3-torch; a
# missing torch is a failure: tests/run installs it).  PROG's loop mode is
# also traced (MEMPLAN_TRACE) and read back by MEMPLAN, whose period must be
# the loop's; its service mode and bad MEMPLAN_* values check the summary's
# explanations and the messages word for word.
#
# An AddressSanitizer build of SO or PROG cannot be preloaded into an
# uninstrumented program: then every case is skipped with a message
# (neither passed nor failed).  The CMake target builds both without
# sanitizers, so this only happens with hand-made builds.
set -u
if [ $# -ne 2 ] && [ $# -ne 3 ]; then
    echo "usage: $0 LIBMEMPLAN-PRELOAD.so PROG [MEMPLAN]" >&2
    exit 2
fi
so=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
prog=$2
memplan=${3:-$(dirname "$so")/memplan}   # the CLI, built beside the library
py=/usr/bin/python3
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
# check NAME CONDITION...: the condition is a command
check() {
    name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

for f in "$so" "$prog"; do
    if [ ! -f "$f" ]; then
        echo "preload: $f not found"
        echo "preload: 0 passed, 1 failed"
        exit 1
    fi
    if nm -D "$f" 2>/dev/null | grep -q '__asan_init'; then
        echo "preload: skipped: $f is built with AddressSanitizer, which cannot be preloaded"
        echo "preload: 0 passed, 0 failed (skipped)"
        exit 0
    fi
done

# run TAG ENV... -- CMD...: stdout, stderr and status in $tmp/TAG.{out,err,rc}
run() {
    tag=$1
    shift
    env "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err"
    echo $? >"$tmp/$tag.rc"
}
same() { cmp -s "$tmp/$1.out" "$tmp/$2.out" && cmp -s "$tmp/$1.rc" "$tmp/$2.rc"; }
# the summary line of TAG's stderr
summary() { grep '^memplan-preload: ' "$tmp/$1.err" | tail -n 1; }
# served N: the number before "from the arena" in TAG's summary
served() { summary "$1" | sed -n 's/.*: \([0-9]*\) from the arena.*/\1/p'; }
replayed() {
    s=$(summary "$1")
    n=$(served "$1")
    case $s in *" replaying, "*", 0 overlaps") ;; *) echo "  summary: $s"; return 1 ;; esac
    if [ -z "$n" ] || [ "$n" -eq 0 ]; then
        echo "  summary: $s"
        return 1
    fi
}
stat_of() { sed -n "s/^$2 //p" "$1"; }

P="LD_PRELOAD=$so"
V="MEMPLAN_VERIFY=1 MEMPLAN_SUMMARY=1"

# ---- the C program ---------------------------------------------------------
run c0 "$prog"
check "prog runs clean without the preload" \
    sh -c "[ \"\$(cat '$tmp/c0.rc')\" = 0 ] && grep -qx 'errors 0' '$tmp/c0.out'"
# shellcheck disable=SC2086
run c1 $P $V "$prog"
check "prog: same output and status under the preload" same c0 c1
check "prog: blocks served from the arena, 0 overlaps" replayed c1
# shellcheck disable=SC2086
run c2 $P $V MEMPLAN_THRESHOLD=1 "$prog"
check "prog: same output with every block through the arena (threshold 1)" same c0 c2
check "prog: threshold 1 replays, 0 overlaps" replayed c2
# shellcheck disable=SC2086
run c3 $P MEMPLAN_SUMMARY=1 MEMPLAN_DISABLE=1 "$prog"
check "prog: same output with MEMPLAN_DISABLE=1" same c0 c3
check "prog: disabled summary serves nothing" \
    sh -c "grep -q '^memplan-preload: disabled, .* 0 from the arena' '$tmp/c3.err'"
# shellcheck disable=SC2086
run c4 $P MEMPLAN_VERIFY=1 MEMPLAN_STATS="$tmp/stats.txt" MEMPLAN_WARMUP=3 \
    MEMPLAN_THRESHOLD=32K "$prog"
check "prog: same output with a stats file, warm-up 3, threshold 32K" same c0 c4
check "prog: stats file shows replay and 0 overlaps" sh -c "
    [ \"\$(sed -n 's/^served_arena //p' '$tmp/stats.txt')\" -gt 0 ] &&
    [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats.txt')\" = 0 ] &&
    [ \"\$(sed -n 's/^threshold //p' '$tmp/stats.txt')\" = 32768 ]"
# "replaying" in the c4, c6 and c7 checks means the arena served blocks: prog's threads can make
# a late relearn (1 run in about 10 on the loaded 2-core VM), so the state
# at exit may be "learning" again after a replay that went well.
# glibc is the real allocator here: one trim when replay starts, one after
# the first replayed iteration (docs/preload.md); none with MEMPLAN_TRIM=0
check "prog: glibc's cache trimmed twice once replaying" sh -c "
    [ \"\$(sed -n 's/^trims //p' '$tmp/stats.txt')\" = 2 ]"
# shellcheck disable=SC2086
run c6 $P MEMPLAN_VERIFY=1 MEMPLAN_STATS="$tmp/stats6.txt" MEMPLAN_TRIM=0 "$prog"
check "prog: same output with MEMPLAN_TRIM=0, no trim, still replaying" sh -c "
    cmp -s '$tmp/c0.out' '$tmp/c6.out' &&
    [ \"\$(sed -n 's/^trims //p' '$tmp/stats6.txt')\" = 0 ] &&
    [ \"\$(sed -n 's/^served_arena //p' '$tmp/stats6.txt')\" -gt 0 ] &&
    [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats6.txt')\" = 0 ]"
# the forwarded blocks and regions from the real allocator (MEMPLAN_LEAN=0)
# instead of mapped directly (the default, every run above)
# shellcheck disable=SC2086
run c7 $P MEMPLAN_VERIFY=1 MEMPLAN_STATS="$tmp/stats7.txt" MEMPLAN_LEAN=0 "$prog"
check "prog: same output with MEMPLAN_LEAN=0, still replaying, 0 overlaps" sh -c "
    cmp -s '$tmp/c0.out' '$tmp/c7.out' &&
    [ \"\$(sed -n 's/^served_arena //p' '$tmp/stats7.txt')\" -gt 0 ] &&
    [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats7.txt')\" = 0 ]"
# another allocator behind memplan: glibc's malloc_trim is not its, never called
je=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$je" ]; then
    run c7 LD_PRELOAD="$so $je" MEMPLAN_VERIFY=1 MEMPLAN_STATS="$tmp/stats7.txt" "$prog"
    check "prog: same output with jemalloc behind memplan, replaying, no trim" sh -c "
        cmp -s '$tmp/c0.out' '$tmp/c7.out' &&
        [ \"\$(sed -n 's/^trims //p' '$tmp/stats7.txt')\" = 0 ] &&
        [ \"\$(sed -n 's/^served_arena //p' '$tmp/stats7.txt')\" -gt 0 ] &&
        [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats7.txt')\" = 0 ]"
else
    echo "skip prog with jemalloc behind memplan: $je not installed (scripts/setup-allocators)"
fi
# shellcheck disable=SC2086
run c5 $P MEMPLAN_STATS=- MEMPLAN_THRESHOLD=junk MEMPLAN_STRATEGY=greedy-size "$prog"
check "prog: stats on stderr (-), a bad threshold is ignored with a warning" sh -c "
    cmp -s '$tmp/c0.out' '$tmp/c5.out' &&
    grep -q '^served_arena ' '$tmp/c5.err' &&
    [ \"\$(grep -c '^memplan-preload: MEMPLAN_THRESHOLD=junk: ' '$tmp/c5.err')\" = 1 ] &&
    grep -qx 'threshold 65536' '$tmp/c5.err'"

# ---- the cache of 256 B - 64 KiB blocks (preload/smallcache.c) --------------
# "prog churn": random small and mid-size calls on three threads, a free on
# another thread than the malloc, threads exiting with blocks cached.  The
# canaries catch a block handed out twice; the stats count the cache's hits.
run k0 "$prog" churn
# shellcheck disable=SC2086
run k1 $P MEMPLAN_STATS="$tmp/k1.txt" "$prog" churn
# shellcheck disable=SC2086
run k2 $P MEMPLAN_STATS="$tmp/k2.txt" MEMPLAN_SMALL_CACHE=4K "$prog" churn
# shellcheck disable=SC2086
run k3 $P MEMPLAN_STATS="$tmp/k3.txt" MEMPLAN_SMALL_CACHE=0 "$prog" churn
hits() { n=$(stat_of "$tmp/$1.txt" small_cache_hits); echo "${n:-none}"; }
check "churn: runs clean without the preload" grep -qx 'errors 0' "$tmp/k0.out"
check "churn: same output under the preload, over 500 blocks from the cache" sh -c "
    cmp -s '$tmp/k0.out' '$tmp/k1.out' && [ $(hits k1) -gt 500 ]"
check "churn: same output with a 4 KiB cache (drained when full)" sh -c "
    cmp -s '$tmp/k0.out' '$tmp/k2.out' && [ $(hits k2) -gt 0 ] && [ $(hits k2) -lt $(hits k1) ]"
check "churn: same output with MEMPLAN_SMALL_CACHE=0, no hits" sh -c "
    cmp -s '$tmp/k0.out' '$tmp/k3.out' && [ $(hits k3) = 0 ]"

# ---- MEMPLAN_TRACE: the run as a trace, read back by memplan trace ----------
# "prog loop 30": the weights (2 allocations), 30 iterations of 10
# allocations and 10 frees (the first has no carried block to free: 9), the
# teardown's 3 frees; 302 frees in all, and the period is one iteration, 20
# events.  Whatever libc allocates for stdout may add allocations, no frees.
# field NAME FILE: the value after NAME in `memplan trace stats|period` output
field() { sed -n "s/^$1  *\([0-9]*\).*/\1/p" "$2"; }
looped() {   # TAG: the trace of TAG read back: 302 frees, period 20, >= 29 iterations
    "$memplan" trace stats "$tmp/$1.trace" >"$tmp/$1.stats" &&
        "$memplan" trace period "$tmp/$1.trace" >"$tmp/$1.period" &&
        [ "$(field frees "$tmp/$1.stats")" = 302 ] &&
        [ "$(field allocations "$tmp/$1.stats")" -ge 302 ] &&
        [ "$(field period "$tmp/$1.period")" = 20 ] &&
        [ "$(field 'full iterations' "$tmp/$1.period")" -ge 29 ] ||
        { cat "$tmp/$1.stats" "$tmp/$1.period" 2>/dev/null | sed 's/^/  /'; return 1; }
}
if [ ! -x "$memplan" ]; then
    bad "trace: the memplan CLI is not at $memplan (give it as the third argument)"
else
    run l0 "$prog" loop 30
    run l1 $P MEMPLAN_DISABLE=1 MEMPLAN_SUMMARY=1 MEMPLAN_TRACE="$tmp/l1.trace" "$prog" loop 30
    check "trace: same output, tracing alone (MEMPLAN_DISABLE=1)" same l0 l1
    check "trace: the file read back has the loop's period, 20 events" looped l1
    check "trace: the summary names the file and its events" \
        grep -qx "memplan-preload: trace $tmp/l1.trace: [0-9]* events" "$tmp/l1.err"
    # shellcheck disable=SC2086
    run l2 $P $V MEMPLAN_TRACE="$tmp/l2.trace" "$prog" loop 30
    check "trace: same output while the arena replays" same l0 l2
    check "trace: arena replaying, 0 overlaps" replayed l2
    check "trace: the loop's period with the arena on too" looped l2
    # MEMPLAN_TRACE_MIN=64K: the 8 blocks of an iteration at or above 64 KiB
    # (4 allocations, 2 by realloc, 2 more), the 1 MiB weight: 241
    # allocations, 241 frees, period 16 events
    run l8 $P MEMPLAN_DISABLE=1 MEMPLAN_TRACE="$tmp/l8.trace" MEMPLAN_TRACE_MIN=64K "$prog" loop 30
    check "trace: MEMPLAN_TRACE_MIN=64K keeps the big blocks, period 16" sh -c "
        '$memplan' trace stats '$tmp/l8.trace' >'$tmp/l8.stats' &&
        '$memplan' trace period '$tmp/l8.trace' >'$tmp/l8.period' &&
        grep -qx 'allocations  *241' '$tmp/l8.stats' && grep -qx 'frees  *241' '$tmp/l8.stats' &&
        grep -qx 'period  *16 events' '$tmp/l8.period'"
    # threads and fork: the trace stays valid (memplan trace reads it)
    run l3 $P MEMPLAN_TRACE="$tmp/l3.trace" "$prog"
    check "trace: threads and fork: same output, a valid trace" sh -c "
        cmp -s '$tmp/c0.out' '$tmp/l3.out' && '$memplan' trace stats '$tmp/l3.trace' >/dev/null"
    # the bound: 0.1K = 102 events, a valid prefix, said even without the summary
    run l4 $P MEMPLAN_TRACE="$tmp/l4.trace" MEMPLAN_TRACE_MAX=0.1K "$prog" loop 30
    check "trace: MEMPLAN_TRACE_MAX=0.1K stops at 102 events and says so" sh -c "
        cmp -s '$tmp/l0.out' '$tmp/l4.out' &&
        grep -qxF 'memplan-preload: trace $tmp/l4.trace: recording stopped at MEMPLAN_TRACE_MAX=102 events; the file holds the run'\''s first 102 events' '$tmp/l4.err' &&
        '$memplan' trace stats '$tmp/l4.trace' | grep -qx 'events  *102'"
    run l5 $P MEMPLAN_TRACE="$tmp/nodir/t.trace" "$prog" loop 3
    run l6 "$prog" loop 3
    check "trace: an unwritable FILE is said, the program goes on" sh -c "
        same() { cmp -s \"\$1\" \"\$2\"; }
        same '$tmp/l5.out' '$tmp/l6.out' && same '$tmp/l5.rc' '$tmp/l6.rc' &&
        grep -qxF 'memplan-preload: MEMPLAN_TRACE: not written: $tmp/nodir/t.trace: No such file or directory' '$tmp/l5.err'"
    mkdir "$tmp/pid"
    run l7 $P MEMPLAN_TRACE="$tmp/pid/p.%p.trace" "$prog" loop 3
    check "trace: %p in FILE is the process id" sh -c "
        ls '$tmp/pid' | grep -qx 'p\.[0-9][0-9]*\.trace' && [ \"\$(ls '$tmp/pid' | wc -l)\" = 1 ]"
fi

# ---- the summary: sizes, why the arena did not engage; values with units ----
# shellcheck disable=SC2086
run s1 $P MEMPLAN_SUMMARY=1 "$prog" loop 30
check "summary: sizes in KiB/MiB" sh -c "
    grep -q '^memplan-preload: replaying, threshold 64 KiB, .* footprint [0-9.]* [KM]iB (bound [0-9.]* [KM]iB, learned peak [0-9.]* [KM]iB)' '$tmp/s1.err'"
# The service: 40 requests, each 4 allocations and 4 frees of >= 80 KiB, at
# four batch sizes, never three alike in a row, plus the weights' allocation
# and free: 322 traced events; the first request is the warm-up before the
# live bytes first fall back to the weights, so 39 candidate iterations.
# No period, but four patterns that recur: the arena learns each of them
# and replays whichever comes (docs/arena.md, "Several patterns").
# shellcheck disable=SC2086
run s2 $P $V "$prog" service
run s0 "$prog" service
check "service: the output is unchanged" same s0 s2
check "service: replays its four patterns, 0 overlaps" replayed s2
check "service: four patterns" grep -q ' 4 patterns, [0-9]* unmatched, ' "$tmp/s2.err"
check "service: at least half of the requests from the arena" sh -c "[ $(served s2) -ge 80 ]"
# With one period only (MEMPLAN_PATTERNS=1) it never replays, and says why.
run s5 $P MEMPLAN_SUMMARY=1 MEMPLAN_PATTERNS=1 "$prog" service
check "service: same output with MEMPLAN_PATTERNS=1" same s0 s5
check "summary: why the service never replays with one period only" grep -qxF \
    'memplan-preload: not replaying: no period in 322 traced events; 39 candidate iterations (cut where the live bytes fall to their low) in 4 distinct patterns, the longest repeat 2 alike in a row (8 events each; replay needs 3 in a row)' \
    "$tmp/s5.err"
run s3 $P MEMPLAN_SUMMARY=1 MEMPLAN_THRESHOLD=1G "$prog" loop 3
check "summary: no request reached MEMPLAN_THRESHOLD=1G" grep -qxF \
    'memplan-preload: not replaying: no request of at least 1 GiB (MEMPLAN_THRESHOLD)' "$tmp/s3.err"
run s4 $P MEMPLAN_SUMMARY=1 "$prog" loop 3
check "summary: three iterations: a period, not confirmed yet" grep -qx \
    'memplan-preload: not replaying yet: a period of [0-9]* events repeats 3 times from event 1, not confirmed yet (docs/arena.md, Confirmation)' \
    "$tmp/s4.err"
# units: K M G T, KiB ... powers of 1024; KB MB ... powers of 1000; fractions
for u in 1.5K:1536 64KB:64000 2GiB:2147483648 0.5m:524288 1.25MB:1250000 7:7; do
    run u $P MEMPLAN_STATS="$tmp/u.txt" MEMPLAN_THRESHOLD="${u%%:*}" "$prog" loop 3
    check "units: MEMPLAN_THRESHOLD=${u%%:*} is ${u#*:} bytes" sh -c "
        [ \"\$(sed -n 's/^threshold //p' '$tmp/u.txt')\" = ${u#*:} ] && [ ! -s '$tmp/u.err' ]"
done
forms='accepted forms: 123, 64K, 1.5M, 2GiB, 10MB (K M G T and KiB MiB GiB TiB are powers of 1024, KB MB GB TB powers of 1000)'
run b1 $P MEMPLAN_STATS="$tmp/b1.txt" MEMPLAN_THRESHOLD="64 KiB" MEMPLAN_WARMUP=1.5 \
    MEMPLAN_RELEARN=99999999999T MEMPLAN_TRACE_MAX=lots MEMPLAN_TRACE="$tmp/b1.trace" \
    "$prog" loop 3
check "units: bad values named once with the accepted forms; defaults used" sh -c "
    cmp -s '$tmp/l6.out' '$tmp/b1.out' &&
    grep -qxF 'memplan-preload: MEMPLAN_THRESHOLD=64 KiB: not a whole number or a number with a unit; $forms; using the default, 64 KiB' '$tmp/b1.err' &&
    grep -qxF 'memplan-preload: MEMPLAN_WARMUP=1.5: not a whole number or a number with a unit; $forms; using the default, 2' '$tmp/b1.err' &&
    grep -qxF 'memplan-preload: MEMPLAN_RELEARN=99999999999T: too large; $forms; using the default, 4' '$tmp/b1.err' &&
    grep -qxF 'memplan-preload: MEMPLAN_TRACE_MAX=lots: not a whole number or a number with a unit; $forms; using the default, 4M (4194304 events)' '$tmp/b1.err' &&
    [ \"\$(wc -l <'$tmp/b1.err')\" = 4 ] &&
    [ \"\$(sed -n 's/^threshold //p' '$tmp/b1.txt')\" = 65536 ]"

# ---- Python ----------------------------------------------------------------
pysmall='import json, zlib
d = {i: str(i) * 3 for i in range(20000)}
s = 0
for it in range(100):
    b = bytearray(300000)
    b[::7] = bytes([it % 251]) * len(b[::7])
    s += zlib.crc32(bytes(b)) + zlib.crc32(json.dumps(d).encode())
print(s)'
run p0 "$py" -c "$pysmall"
# shellcheck disable=SC2086
run p1 $P $V "$py" -c "$pysmall"
# shellcheck disable=SC2086
run p2 $P MEMPLAN_THRESHOLD=1 "$py" -c "$pysmall"
check "python: runs without the preload" sh -c "[ \"\$(cat '$tmp/p0.rc')\" = 0 ]"
check "python: same output under the preload" same p0 p1
check "python: same output with every block through the arena" same p0 p2
check "python: blocks served from the arena, 0 overlaps" replayed p1

torch_script='import torch, torchvision
torch.manual_seed(0)
torch.set_num_threads(1)
m = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
s = 0.0
with torch.no_grad():
    for i in range(10):
        s += float(m(x).double().sum())
print("sum %.12e" % s)'
if ! "$py" -c 'import torch, torchvision' 2>/dev/null; then
    bad "torch: $py cannot import torch and torchvision (run scripts/setup-torch)"
else
    run t0 "$py" -c "$torch_script"
    # shellcheck disable=SC2086
    run t1 $P $V "$py" -c "$torch_script"
    # shellcheck disable=SC2086
    run t2 $P MEMPLAN_DISABLE=1 "$py" -c "$torch_script"
    check "torch: resnet18 runs without the preload" sh -c "[ \"\$(cat '$tmp/t0.rc')\" = 0 ]"
    check "torch: same output under the preload" same t0 t1
    check "torch: same output with MEMPLAN_DISABLE=1" same t0 t2
    check "torch: blocks served from the arena, 0 overlaps" replayed t1
    summary t1 | sed 's/^/  /'
fi

if [ "$fail" -ne 0 ]; then
    for f in "$tmp"/*.err; do
        [ -s "$f" ] && { echo "--- $(basename "$f")"; tail -n 5 "$f"; }
    done
fi
echo "preload: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
