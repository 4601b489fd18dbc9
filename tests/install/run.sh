#!/bin/sh
# tests/install/run.sh BUILD -- installs the already built BUILD into a
# temporary prefix (cmake --install; nothing is rebuilt) and checks what a
# user gets there: the CLI, libmemplan.so.0 and libmemplan.a, the headers,
# the preload library, memplan.pc, a C program built through pkg-config
# against the shared and against the static library, and the Python package
# finding the installed library.  One line per check; the first failure
# ends the test with a message saying what failed.  Paths, version,
# compiler and MP_SANITIZE come from BUILD/CMakeCache.txt, so that the
# ASan build links its programs with the sanitizer runtimes it needs.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)

fail() { echo "install: FAILED: $*" >&2; exit 1; }
ok() { echo "install: ok: $*"; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }

[ -f "$build/CMakeCache.txt" ] || fail "$build is not a CMake build directory"
command -v pkg-config >/dev/null || fail "pkg-config is not installed (scripts/setup-debian installs it)"
cmake=$(cache CMAKE_COMMAND)
cc=$(cache CMAKE_C_COMPILER)
version=$(cache CMAKE_PROJECT_VERSION)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
incdir=$(cache CMAKE_INSTALL_INCLUDEDIR)
pydir=$(cache MP_PYTHON_DIR)
for d in "$libdir" "$incdir" "$pydir"; do
    case $d in /*) fail "$d is absolute: this test installs under a temporary prefix" ;; esac
done
san=""
case $(cache MP_SANITIZE) in ON|on|1|TRUE|true|YES|yes) san="-fsanitize=address,undefined" ;; esac

tmp=$(mktemp -d)
# cmake --install rewrites BUILD/install_manifest.txt, which may list a real
# installation (the uninstall list of docs/install.md): put it back.
manifest="$build/install_manifest.txt"
if [ -f "$manifest" ]; then cp "$manifest" "$tmp/manifest.saved"; fi
restore() {
    if [ -f "$tmp/manifest.saved" ]; then cp "$tmp/manifest.saved" "$manifest"; else rm -f "$manifest"; fi
    rm -rf "$tmp"
}
trap restore EXIT
trap 'exit 1' HUP INT TERM
lib="$tmp/$libdir"

"$cmake" --install "$build" --prefix "$tmp" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install $build --prefix $tmp"; }
ok "cmake --install into $tmp"

"$tmp/bin/memplan" --help >/dev/null || fail "bin/memplan --help"
ok "bin/memplan --help"
readelf -d "$lib/libmemplan.so.0" | grep -q 'SONAME.*\[libmemplan\.so\.0\]' ||
    fail "$libdir/libmemplan.so.0 missing or its SONAME is not libmemplan.so.0"
ok "$libdir/libmemplan.so.0 (SONAME libmemplan.so.0)"
for f in libmemplan.so libmemplan.a libmemplan-preload.so pkgconfig/memplan.pc; do
    [ -f "$lib/$f" ] || fail "$libdir/$f missing"
done
ok "$libdir: libmemplan.so libmemplan.a libmemplan-preload.so pkgconfig/memplan.pc"
for h in "$src"/include/*.h; do
    cmp -s "$h" "$tmp/$incdir/${h##*/}" || fail "$incdir/${h##*/} missing or differs from include/"
done
ok "$incdir: every include/*.h"

PKG_CONFIG_PATH="$lib/pkgconfig"
export PKG_CONFIG_PATH
[ "$(pkg-config --modversion memplan)" = "$version" ] || fail "pkg-config --modversion memplan is not $version"
ok "pkg-config --modversion memplan: $version"

run_example() { # NAME: runs $tmp/NAME, which must print the project version
    out=$("$tmp/$1") || fail "$1 exited with status $?"
    case $out in "memplan $version:"*) ;; *) fail "$1 printed '$out'" ;; esac
    ok "$1: $out"
}

# Shared: pkg-config's flags alone, the run path through an rpath.  $san
# is empty or one flag; $(pkg-config ...) must split into words.
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $san "$src/tests/install/example.c" -o "$tmp/example-shared" \
    $(pkg-config --cflags --libs memplan) -Wl,-rpath,"$lib" || fail "linking example.c against libmemplan.so"
readelf -d "$tmp/example-shared" | grep -q 'NEEDED.*\[libmemplan\.so\.0\]' ||
    fail "example-shared does not need libmemplan.so.0"
run_example example-shared

# Static, as docs/install.md says: the archive first, then pkg-config
# --static for its dependencies; --as-needed drops the libmemplan.so its
# -lmemplan would add (Debian's gcc passes it by default, but not with
# -fsanitize).
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $san "$src/tests/install/example.c" -o "$tmp/example-static" \
    $(pkg-config --cflags memplan) "$(pkg-config --variable=libdir memplan)/libmemplan.a" \
    -Wl,--as-needed $(pkg-config --static --libs memplan) || fail "linking example.c against libmemplan.a"
if readelf -d "$tmp/example-static" | grep -q 'NEEDED.*libmemplan'; then
    fail "example-static depends on libmemplan.so"
fi
run_example example-static

# Python: the installed package, never the source tree's, finding the
# installed library through memplan/_install.py (so MEMPLAN_LIB is unset).
# An ASan libmemplan.so can only be loaded into the uninstrumented
# interpreter with the ASan runtime preloaded; the interpreter's own
# allocations are not ours to leak-check.
(
unset MEMPLAN_LIB
if [ -n "$san" ]; then
    LD_PRELOAD=$("$cc" -print-file-name=libasan.so)
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export LD_PRELOAD ASAN_OPTIONS
fi
PYTHONPATH="$tmp/$pydir" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$tmp" "$version" <<'EOF'
import os, sys
tmp, version = os.path.realpath(sys.argv[1]), sys.argv[2]

def under(p):
    return os.path.realpath(p).startswith(tmp + os.sep)

def check(cond, what):
    if not cond:
        sys.exit("install: FAILED: python: " + what)
    print("install: ok: python: " + what)

import memplan
check(under(memplan.__file__), f"memplan imported from the prefix ({memplan.__file__})")
from memplan import _install
check(under(_install.LIBDIR), f"memplan._install.LIBDIR is {_install.LIBDIR}")
if not os.path.exists(os.path.join(os.path.dirname(memplan.__file__), "lib.py")):
    print("install: skipped: python: no memplan.lib binding in this tree")
    sys.exit(0)
from memplan import lib
check(under(lib.library_path()), f"memplan.lib loaded {lib.library_path()}")
check(lib.version() == version, f"memplan.lib.version() is {lib.version()!r}, expected {version!r}")
EOF
) || fail "python: the installed package (see above)"
echo "install: all checks passed"
