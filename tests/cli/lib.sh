# lib.sh -- sourced by the CLI test scripts: a scratch directory $T removed
# at exit, pass/fail counters, and `expect CODE TEXT ARGS...`, which runs
# $M (the memplan binary) with ARGS and wants exit CODE and TEXT in its
# stdout+stderr.  The caller sets M and cd's to tests/cli first.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*" >&2; }

expect() {
    code=$1 text=$2
    shift 2
    out=$("$M" "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$code" ]; then bad "memplan $*: exit $rc, want $code ($out)"; return; fi
    case $out in
    *"$text"*) ok ;;
    *) bad "memplan $*: output lacks '$text': $out" ;;
    esac
}
