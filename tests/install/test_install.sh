#!/usr/bin/env bash
# tests/install/test_install.sh BUILD_DIR SOURCE_DIR CC [SANITIZE]: installs
# the current build with `meson install --destdir` into a temporary
# directory and checks the layout a packager and a user rely on (SONAME and
# symlinks, the static library, frankentrace.pc, <frankentrace.h>, ftc and
# ftledger with man pages and bash completion), then builds consumer.c out
# of the tree with `pkg-config --cflags --libs frankentrace`, shared and
# --static, runs both and compares their output. Exit 77 (skipped) only when
# pkg-config or readelf is missing.
set -u
build=$1 src=$2 cc=$3 san=${4:-none}
for tool in pkg-config readelf; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

dest=$tmp/dest
if ! meson install -C "$build" --destdir "$dest" --no-rebuild >"$tmp/install.log" 2>&1; then
  echo "FAIL: meson install"; tail -20 "$tmp/install.log"; exit 1
fi
pc=$(find "$dest" -name frankentrace.pc | head -1)
[ -n "$pc" ] && ok || { bad "no frankentrace.pc installed"; echo "$pass passed, $fail failed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
prefix_dir=$(dirname "$(find "$dest" -name frankentrace.h -path '*/include/*' | head -1)")

# The shared library: real file, SONAME with the ABI major, two symlinks.
real=$(cd "$libdir" && ls libfrankentrace.so.*.*.* 2>/dev/null | head -1)
soname=$(readelf -d "$libdir/$real" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libfrankentrace.so.1 ] && ok || bad "SONAME '$soname', wanted libfrankentrace.so.1"
[ "$(readlink "$libdir/libfrankentrace.so.1")" = "$real" ] && ok || bad "libfrankentrace.so.1 does not link to $real"
[ "$(readlink "$libdir/libfrankentrace.so")" = libfrankentrace.so.1 ] && ok || bad "libfrankentrace.so does not link to libfrankentrace.so.1"
[ -f "$libdir/libfrankentrace.a" ] && ok || bad "no libfrankentrace.a"
rt_soname=$(readelf -d "$libdir/libfrankentrace_rt.so.1" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$rt_soname" = libfrankentrace_rt.so.1 ] && ok || bad "libfrankentrace_rt SONAME '$rt_soname'"
# The header: <frankentrace.h> only (ft.h stays in the tree).
[ -f "$prefix_dir/frankentrace.h" ] && ok || bad "no include/frankentrace.h"
[ ! -e "$prefix_dir/ft.h" ] && ok || bad "ft.h installed into include/"
# The tools, their man pages and completion.
root=$(dirname "$prefix_dir")
for t in ftc ftledger; do
  [ -x "$root/bin/$t" ] && ok || bad "no bin/$t"
  [ -f "$root/share/man/man1/$t.1" ] && ok || bad "no share/man/man1/$t.1"
  [ -f "$root/share/bash-completion/completions/$t" ] && ok || bad "no completion for $t"
  v=$("$root/bin/$t" --version); rc=$?
  [ $rc -eq 0 ] && [[ $v =~ ^$t\ [0-9]+\.[0-9]+\.[0-9]+$ ]] && ok || bad "$t --version: exit $rc, '$v'"
done
bash -c "source '$root/share/bash-completion/completions/ftc'; complete -p ftc ftledger" >/dev/null 2>&1 && ok ||
  bad "the completion script does not define completions for ftc and ftledger"

# Out of the tree, through pkg-config only.
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$libdir/pkgconfig
flags=()
if [ "$san" != none ]; then flags=(-fsanitize="$san"); fi
want="version: header and library agree
grad of sum(x*x) at [1, 2, 3]: 2 4 6
a parse error is FT_ERR_PARSE"
cp "$src/tests/install/consumer.c" "$tmp/consumer.c"
cd "$tmp"
if ! shared_flags=$(pkg-config --cflags --libs frankentrace 2>"$tmp/pc.err"); then
  bad "pkg-config --cflags --libs frankentrace: $(cat "$tmp/pc.err")"
elif ! $cc -std=c11 -Wall -Werror "${flags[@]}" consumer.c $shared_flags -Wl,-rpath,"$libdir" -o shared 2>"$tmp/cc.err"; then
  bad "shared build with: $shared_flags"; head -20 "$tmp/cc.err"
else
  readelf -d shared | grep -q 'NEEDED.*\[libfrankentrace.so.1\]' && ok || bad "the shared build does not need libfrankentrace.so.1"
  got=$(./shared 2>&1)
  [ "$got" = "$want" ] && ok || { bad "shared program printed:"; echo "$got"; }
fi
# --static: Libs.private and Requires.private must name everything the
# archive needs; the archive is taken over the .so with -Bstatic.
if ! static_flags=$(pkg-config --static --cflags --libs frankentrace 2>"$tmp/pc.err"); then
  bad "pkg-config --static: $(cat "$tmp/pc.err")"
else
  static_flags=$(echo " $static_flags " | sed 's/ -lfrankentrace / -Wl,-Bstatic -lfrankentrace -Wl,-Bdynamic /')
  if ! $cc -std=c11 -Wall -Werror "${flags[@]}" consumer.c $static_flags -o static 2>"$tmp/cc.err"; then
    bad "static build with: $static_flags"; head -20 "$tmp/cc.err"
  else
    ! readelf -d static | grep -q 'NEEDED.*libfrankentrace' && ok || bad "the static build still needs libfrankentrace.so"
    got=$(./static 2>&1)
    [ "$got" = "$want" ] && ok || { bad "static program printed:"; echo "$got"; }
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
