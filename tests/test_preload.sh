#!/bin/sh
# tests/test_preload.sh SO PROG -- libmemplan-preload.so under real programs.
#
# SO is the built libmemplan-preload.so, PROG the test program built from
# tests/preload/prog.c.  Each case runs a program without LD_PRELOAD and
# with it (and with MEMPLAN_DISABLE=1) and requires the same output and exit
# status; under MEMPLAN_SUMMARY=1 / MEMPLAN_STATS it also requires that blocks
# were served from the arena (replay happened), that the registry saw
# 0 overlaps (MEMPLAN_VERIFY=1), and that glibc's cache was trimmed when
# replay started (none with MEMPLAN_TRIM=0).  The programs: PROG (canaries, realloc,
# calloc, alignments, threads, fork), Python with a small script and with
# everything through the arena (MEMPLAN_THRESHOLD=1), and a torchvision
# resnet18 inference loop (Debian's /usr/bin/python3 and python3-torch; a
# missing torch is a failure: tests/run installs it).
#
# An AddressSanitizer build of SO or PROG cannot be preloaded into an
# uninstrumented program: then every case is skipped with a message
# (neither passed nor failed).  The CMake target builds both without
# sanitizers, so this only happens with hand-made builds.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 LIBMEMPLAN-PRELOAD.so PROG" >&2
    exit 2
fi
so=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
prog=$2
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
    [ \"\$(sed -n 's/^state //p' '$tmp/stats.txt')\" = replaying ] &&
    [ \"\$(sed -n 's/^served_arena //p' '$tmp/stats.txt')\" -gt 0 ] &&
    [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats.txt')\" = 0 ] &&
    [ \"\$(sed -n 's/^threshold //p' '$tmp/stats.txt')\" = 32768 ]"
# glibc is the real allocator here: one trim when replay starts, one after
# the first replayed iteration (docs/preload.md); none with MEMPLAN_TRIM=0
check "prog: glibc's cache trimmed twice once replaying" sh -c "
    [ \"\$(sed -n 's/^trims //p' '$tmp/stats.txt')\" = 2 ]"
# shellcheck disable=SC2086
run c6 $P MEMPLAN_VERIFY=1 MEMPLAN_STATS="$tmp/stats6.txt" MEMPLAN_TRIM=0 "$prog"
check "prog: same output with MEMPLAN_TRIM=0, no trim, still replaying" sh -c "
    cmp -s '$tmp/c0.out' '$tmp/c6.out' &&
    [ \"\$(sed -n 's/^trims //p' '$tmp/stats6.txt')\" = 0 ] &&
    [ \"\$(sed -n 's/^state //p' '$tmp/stats6.txt')\" = replaying ] &&
    [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats6.txt')\" = 0 ]"
# another allocator behind memplan: glibc's malloc_trim is not its, never called
je=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$je" ]; then
    run c7 LD_PRELOAD="$so $je" MEMPLAN_VERIFY=1 MEMPLAN_STATS="$tmp/stats7.txt" "$prog"
    check "prog: same output with jemalloc behind memplan, replaying, no trim" sh -c "
        cmp -s '$tmp/c0.out' '$tmp/c7.out' &&
        [ \"\$(sed -n 's/^trims //p' '$tmp/stats7.txt')\" = 0 ] &&
        [ \"\$(sed -n 's/^state //p' '$tmp/stats7.txt')\" = replaying ] &&
        [ \"\$(sed -n 's/^overlaps //p' '$tmp/stats7.txt')\" = 0 ]"
else
    echo "skip prog with jemalloc behind memplan: $je not installed (scripts/setup-allocators)"
fi
# shellcheck disable=SC2086
run c5 $P MEMPLAN_STATS=- MEMPLAN_THRESHOLD=junk MEMPLAN_STRATEGY=greedy-size "$prog"
check "prog: stats on stderr (-), a bad threshold is ignored with a warning" sh -c "
    cmp -s '$tmp/c0.out' '$tmp/c5.out' &&
    grep -q '^served_arena ' '$tmp/c5.err' &&
    grep -q 'ignoring MEMPLAN_THRESHOLD=junk' '$tmp/c5.err' &&
    grep -qx 'threshold 65536' '$tmp/c5.err'"

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
