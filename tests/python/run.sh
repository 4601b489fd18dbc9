#!/bin/sh
# Runs Python test modules (default: test_export) with Debian's interpreter
# (the one that has python3-torch) and prints "python: N passed, N failed".
# Usage: run.sh [MODULE...]; each ctest python_* test names its modules.  MEMPLAN names the
# memplan binary (ctest passes it); by default build/memplan.  A missing torch
# fails loudly: install it with scripts/setup-torch.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${MEMPLAN:=$root/build/memplan}"
export MEMPLAN
PYTHONDONTWRITEBYTECODE=1   # leave no __pycache__ in the tree
export PYTHONDONTWRITEBYTECODE
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
if ! /usr/bin/python3 -c 'import torch, torchvision, onnx' 2>/dev/null; then
    echo "python: torch/torchvision/onnx missing for /usr/bin/python3 (run scripts/setup-torch)" >&2
    echo "python: 0 passed, 1 failed"
    exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cd "$here" || exit 1
[ $# -gt 0 ] || set -- test_export
/usr/bin/python3 -m unittest -v "$@" 2>&1 | tee "$log"
ran=$(sed -n 's/^Ran \([0-9]*\) test.*/\1/p' "$log")
[ -n "$ran" ] || ran=0
failed=$(grep -cE '^(FAIL|ERROR):' "$log")
skipped=$(grep -cE '\.\.\. skipped' "$log")
passed=$((ran - failed - skipped))
echo "python: $passed passed, $failed failed"
if [ "$ran" -eq 0 ] || [ "$failed" -ne 0 ] || [ "$skipped" -ne 0 ] || ! grep -q '^OK' "$log"; then
    exit 1
fi
exit 0
