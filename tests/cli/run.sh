#!/bin/sh
# run.sh MEMPLAN -- tests the memplan command through its real binary:
# exit codes, the error text for every malformed input (file, line and
# field named), no partial output files, and plans that round-trip through
# `memplan check`.  Prints "cli: N passed, N failed".
set -u
M=${1:?usage: run.sh path/to/memplan}
cd "$(dirname "$0")"
. ./lib.sh

# Malformed records: exit 2 and the file:line: field message.
expect 2 "bad/empty.csv:1: empty file, expected a header" bounds bad/empty.csv
expect 2 "bad/missing_size.csv:1: header: missing column 'size'" bounds bad/missing_size.csv
expect 2 "bad/unknown_col.csv:1: header: unknown column 'colour'" bounds bad/unknown_col.csv
expect 2 "bad/dup_col.csv:1: header: column 'first' given twice" bounds bad/dup_col.csv
expect 2 "bad/mixed_times.csv:1: header: cannot mix 'lower' with 'last'" bounds bad/mixed_times.csv
expect 2 "bad/short_row.csv:3: expected 4 fields, found 3" bounds bad/short_row.csv
expect 2 "bad/long_row.csv:2: expected 4 fields, found 5" bounds bad/long_row.csv
expect 2 "bad/size_text.csv:2: field 'size': 'abc' is not a non-negative integer" plan bad/size_text.csv
expect 2 "bad/negative.csv:2: field 'first': '-1' is not a non-negative integer" plan bad/negative.csv
expect 2 "bad/size_overflow.csv:2: field 'size': '18446744073709551616' does not fit in 64 bits" plan bad/size_overflow.csv
expect 2 "bad/last_before_first.csv:2: field 'last': 2 is before first 5" plan bad/last_before_first.csv
expect 2 "bad/empty_halfopen.csv:2: field 'upper': 5 must be greater than lower 5" plan bad/empty_halfopen.csv
expect 2 "bad/size_zero.csv:2: field 'size': must be positive" plan bad/size_zero.csv
expect 2 "bad/dup_id.csv:4: field 'id': duplicate id 0 (first on line 2)" plan bad/dup_id.csv
expect 2 "bad/align_not_pow2.csv:2: field 'align': 12 is not a power of two" plan bad/align_not_pow2.csv
expect 2 "bad/sum_overflow.csv:3: field 'size': total of sizes overflows 64 bits" plan bad/sum_overflow.csv
expect 2 "bad/last_max.csv:2: field 'last': must be below 2^64-1" plan bad/last_max.csv
expect 2 "bad/empty_field.csv:2: field 'last': empty" plan bad/empty_field.csv
expect 2 "bad/fraction.csv:2: field 'size': '3.5' is not a non-negative integer" plan bad/fraction.csv
expect 2 "no/such/file.csv: No such file or directory" plan no/such/file.csv
# Malformed plans.
expect 2 "bad/plan_missing.csv: buffer 2 has no row in the plan" check good/chain.csv bad/plan_missing.csv
expect 2 "bad/plan_unknown_id.csv:5: field 'id': 9 is not a buffer of the records" check good/chain.csv bad/plan_unknown_id.csv
expect 2 "bad/plan_dup_id.csv:4: field 'id': 1 appears twice (first on line 3)" check good/chain.csv bad/plan_dup_id.csv
expect 2 "bad/plan_wrong_size.csv:3: field 'size': 201 but buffer 1 has size 200" check good/chain.csv bad/plan_wrong_size.csv
expect 2 "bad/plan_bad_offset.csv:3: field 'offset': 'x' is not a non-negative integer" check good/chain.csv bad/plan_bad_offset.csv
expect 2 "bad/plan_header.csv:1: header: unknown column 'where'" check good/chain.csv bad/plan_header.csv
# Bad usage.
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "unknown strategy 'best'" plan --strategy best good/chain.csv
expect 2 "give one records file or --model NAME" plan
expect 2 "unknown model 'lenet'" plan --model lenet
expect 2 "--align needs a positive integer" plan --align x good/chain.csv
expect 2 "--align must be a power of two" plan --align 3 good/chain.csv
expect 2 "need RECORDS.csv and PLAN.csv" check good/chain.csv
expect 0 "usage: memplan plan" plan --help
expect 0 "usage: memplan check" check --help
expect 0 "usage: memplan bounds" bounds --help

# The checker: a valid plan, an invalid one (exit 1, conflict named).
expect 0 "valid: 3 buffers, footprint 300, lower bound 300" check good/chain.csv good/chain_plan.csv
expect 1 "invalid: buffers 1 [1,2] at 50+200 and 0 [0,1] at 0+100 overlap" check good/chain.csv bad/plan_conflict.csv

# Both time conventions give the same problem.
expect 0 "lower bound (offsets)    300" bounds good/chain.csv
expect 0 "lower bound (offsets)    300" bounds good/chain_halfopen.csv
expect 0 "lower bound (objects)    300" bounds good/chain_halfopen.csv

# A failed write leaves no file and exits 2.
expect 2 "$T/none/plan.csv" plan -o "$T/none/plan.csv" good/chain.csv
[ ! -e "$T/none/plan.csv" ] && ok || bad "partial output left"
expect 2 "$T/none/p.svg" plan --svg "$T/none/p.svg" good/chain.csv
# A malformed input writes nothing either.
"$M" plan -o "$T/x.csv" --svg "$T/x.svg" bad/size_text.csv >/dev/null 2>&1
[ ! -e "$T/x.csv" ] && [ ! -e "$T/x.svg" ] && ok || bad "output written for bad input"
ls "$T" | grep -q tmp && bad "temporary file left behind" || ok

# Every strategy's plan, written with -o, passes `memplan check`; JSON too.
for s in $("$M" strategies | awk 'NR > 1 { print $1 }'); do
    for f in good/chain.csv good/chain_halfopen.csv; do
        if "$M" plan --strategy "$s" -o "$T/p.csv" "$f" >/dev/null 2>"$T/err"; then
            expect 0 "valid: 3 buffers" check "$f" "$T/p.csv"
        else
            bad "plan --strategy $s $f: $(cat "$T/err")"
        fi
    done
done
"$M" plan --strategy all --json --model mobilenet_v1 >"$T/all.json" 2>"$T/err" || bad "plan all json: $(cat "$T/err")"
if command -v /usr/bin/python3 >/dev/null 2>&1; then
    /usr/bin/python3 - "$T/all.json" <<'PY' && ok || bad "JSON shape"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["naive"] == 20182856 and d["lower_bound"] == 4816896, d
assert len(d["results"]) >= 13, d
for r in d["results"]:
    assert set(r) == {"strategy", "footprint", "ratio", "valid", "ms", "bound"}, r
    assert r["valid"] is True and r["footprint"] >= d["lower_bound"], r
assert d["best"] in [r["strategy"] for r in d["results"]]
PY
else
    grep -q '"best":"' "$T/all.json" && ok || bad "JSON shape"
fi
expect 0 "meets the lower bound: optimal" plan --model mobilenet_v1
expect 0 '"strategy":"auto","footprint":4816896,"ratio":1.000000,"valid":true' plan --json --model mobilenet_v1
expect 0 ',"winner":"greedy-size"}' plan --json --model mobilenet_v1
# pisarchyk2020 Tables 1-2: naive 19.248 / 26.313 MiB, offset bounds 4.594 /
# 5.742 MiB, object bounds 4.594 / 6.604 MiB for MobileNet v1 / v2.
expect 0 "naive                    20182856 (19.248 MiB)" bounds --model mobilenet_v1
expect 0 "lower bound (offsets)    4816896 (4.594 MiB)" bounds --model mobilenet_v1
expect 0 "lower bound (objects)    4816896 (4.594 MiB)" bounds --model mobilenet_v1
expect 0 "naive                    27591112 (26.313 MiB)" bounds --model mobilenet_v2
expect 0 "lower bound (offsets)    6021120 (5.742 MiB)" bounds --model mobilenet_v2
expect 0 "lower bound (objects)    6924288 (6.604 MiB)" bounds --model mobilenet_v2
# DeepLab v3 (both bounds) and PoseNet (offset bound) match too; their naive
# totals and the other models do not (docs/paper-tables.md).
expect 0 "lower bound (offsets)    4530240 (4.320 MiB)" bounds --model deeplab_v3
expect 0 "lower bound (objects)    6401088 (6.105 MiB)" bounds --model deeplab_v3
expect 0 "lower bound (offsets)    6575904 (6.271 MiB)" bounds --model posenet
expect 0 "mobilenet_v1" models
mkdir "$T/models"
expect 0 "$T/models/mobilenet_v2.records.csv" models --write "$T/models"
expect 0 "lower bound (offsets)    6021120 (5.742 MiB)" bounds "$T/models/mobilenet_v2.records.csv"
expect 2 "$T/none/mobilenet_v1.records.csv" models --write "$T/none"
expect 0 '{"models":[{"name":"mobilenet_v1"' models --json
expect 0 '{"name":"greedy-size","kind":"offsets","source":"pisarchyk2020' strategies --json
expect 2 "unexpected argument '--bogus'" strategies --bogus
expect 0 "greedy-size" strategies

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
