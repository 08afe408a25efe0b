#!/bin/bash
# t_install: what `cmake --install` and the .deb put on a machine, used from
# there, compared with the plain tools.
#  - cmake --install BUILD --prefix P: P/bin/bfo reads a tree with the same
#    lines as xxh128sum, and loads P/lib/libbfo (not the build's); a tiny
#    program compiled with `pkg-config --cflags --libs bfo` (P's bfo.pc)
#    reads a file through the installed library, byte-identical to cat;
#    `tar --use-bfo` with P/bin first on PATH loads the installed plugin and
#    writes the archive GNU tar writes, and extracts the tree tar extracts;
#    the man pages are where man finds them; the program runs with no
#    LD_LIBRARY_PATH (bfo.pc's rpath) and loads P's libbfo; the uninstall
#    target leaves nothing behind: P as it was before the install, the
#    directories that were there (one with a file of the user's) kept,
#    those the install made removed;
#  - cpack -G DEB: the package holds bfo, libbfo, bfo.h, bfo.pc, the man
#    pages and the tar front as bfo-tar, never /usr/bin/tar; its bfo.pc
#    says /usr, with no rpath; the tar plugin has a soname
#    (libbfo_tar.so.0); cpack prints no warning and no escape code;
#    unpacked, its bfo reads the tree as xxh128sum does; apt accepts it
#    (apt-get -s install, nothing installed).
# BUILD_DIR (the CMake build) and PROG_CFLAGS (the sanitizers of a sanitized
# build, for the program) come from ctest; exit 77: skipped.
set -u
BUILD=${BUILD_DIR:?BUILD_DIR must name the bfo-native build}
W=$(mktemp -d /tmp/bfo-install-test.XXXXXX)
trap 'rm -rf "$W"' EXIT
FAILS=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
need() { command -v "$1" > /dev/null || { echo "skip: $1 not installed"; exit 77; }; }
need xxh128sum
need pkg-config
need cc

cd "$W"
mkdir -p tree/a/b tree/c
for i in $(seq 1 60); do head -c $((i * 173)) /dev/urandom > "tree/a/f$i"; done
for i in $(seq 1 20); do head -c $((i * 4096 + 7)) /dev/urandom > "tree/a/b/g$i"; done
head -c $((17 * 1024 * 1024 + 3)) /dev/urandom > tree/c/large     # read in pieces
: > tree/c/empty
printf 'name with spaces' > "tree/c/sp ace"
find tree -type f -print0 | xargs -0 xxh128sum | sort -k2 > plain.sums

# the sums of `BFO read --checksum tree` against plain.sums
check_read() {
	"$1" read --checksum tree > got.sums 2> got.err || { fail "$2: exit $?: $(cat got.err)"; return; }
	sort -k2 got.sums | cmp -s - plain.sums && pass "$2: same lines as xxh128sum" ||
		fail "$2: differs from xxh128sum: $(sort -k2 got.sums | diff - plain.sums | head -5)"
}

# ---------------------------------------------------------------- cmake --install
P=$W/prefix
# Directories of the prefix that are there before: the uninstall keeps them.
mkdir -p "$P/bin" "$P/share/man/man1"
echo mine > "$P/bin/mine"
(cd "$P" && find . | sort) > before.list
cmake --install "$BUILD" --prefix "$P" > install.log 2>&1 || { cat install.log; fail "cmake --install"; }
for f in bin/bfo include/bfo.h lib/pkgconfig/bfo.pc share/man/man1/bfo.1 share/man/man1/bfo-cp.1 \
	 share/man/man1/bfo-read.1; do
	[ -e "$P/$f" ] || fail "cmake --install did not install $f"
done
lib=$(ls "$P"/lib*/libbfo.so.0 2> /dev/null | head -1)
[ -n "$lib" ] && pass "installed: bfo, libbfo, bfo.h, bfo.pc, man pages" || fail "no libbfo.so.0 under $P"
# The installed bfo, run from elsewhere with nothing of the build on its paths.
loaded=$(env -u LD_LIBRARY_PATH ldd "$P/bin/bfo" | awk '/libbfo.so.0/ { print $3 }')
[ "$(readlink -f "$loaded")" = "$(readlink -f "$lib")" ] && pass "installed bfo loads $lib" ||
	fail "installed bfo loads '$loaded', not $lib"
check_read "$P/bin/bfo" "installed bfo read --checksum"
"$P/bin/bfo" cp --help | grep -q -- '--remote-bfo' && pass "installed bfo cp --help lists --remote-bfo" ||
	fail "installed bfo cp --help"
if command -v man > /dev/null; then
	MANPATH=$P/share/man man -w bfo-recv > /dev/null 2>&1 && pass "man finds bfo-recv(1) under the prefix" ||
		fail "man -w bfo-recv with MANPATH=$P/share/man"
fi

# A program of the user's, built with what pkg-config says about the install.
cat > prog.c << 'EOF'
/* Reads argv[1] through libbfo and writes its bytes to stdout. */
#include <bfo.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	struct bfo_ctx *ctx;
	struct bfo_file f;
	const char *p = argv[1];
	int n, bad = 0;

	if (argc != 2 || bfo_ctx_create(&ctx, NULL) || bfo_read_submit(ctx, &p, 1) != 1 ||
	    bfo_read_finish(ctx))
		return 2;
	while ((n = bfo_read_wait(ctx, &f, 1, -1)) > 0) {
		if (f.status == 0)
			fwrite(f.data, 1, f.length, stdout);
		else
			bad = 1;
		bfo_read_release(ctx, &f, 1);
	}
	bfo_ctx_destroy(ctx);
	return n < 0 || bad;
}
EOF
pc=$(PKG_CONFIG_PATH=$P/lib/pkgconfig:$(dirname "$lib")/pkgconfig pkg-config --cflags --libs bfo) ||
	fail "pkg-config --cflags --libs bfo"
case "$pc" in *"-I$P/include"*) pass "pkg-config: $pc";; *) fail "pkg-config gave '$pc', not $P's";; esac
# shellcheck disable=SC2086
if cc ${PROG_CFLAGS:-} -o prog prog.c $pc 2> cc.err; then
	env -u LD_LIBRARY_PATH ./prog tree/a/b/g7 > prog.out && cmp -s prog.out tree/a/b/g7 &&
		pass "a program built with pkg-config reads a file through the installed libbfo, as cat" ||
		fail "the pkg-config program's bytes differ from the file"
	loaded=$(env -u LD_LIBRARY_PATH ldd ./prog | awk '/libbfo.so.0/ { print $3 }')
	[ "$(readlink -f "$loaded")" = "$(readlink -f "$lib")" ] &&
		pass "the program finds $lib with no LD_LIBRARY_PATH (bfo.pc's rpath)" ||
		fail "the program loads '$loaded', not $lib"
else
	fail "cc prog.c $pc: $(cat cc.err)"
fi

# The tar front from the install: ahead of /usr/bin/tar on PATH.
if [ -e "$P/lib/bfo-tar/libbfo_tar.so" ]; then
	[ -L "$P/bin/tar" ] && [ -x "$P/bin/bfo-tar" ] && pass "the front: bin/bfo-tar and bin/tar -> bfo-tar" ||
		fail "the front is not installed as bin/bfo-tar and bin/tar"
	(cd tree && /usr/bin/tar -cf ../gnu.tar .)
	(cd tree && env -u BFO_TAR_PLUGIN -u BFO_TAR_REAL PATH="$P/bin:$PATH" BFO_TAR_ENGINE=fast \
		tar --use-bfo -cf ../bfo.tar . 2> ../front.err)
	grep -q '^bfo-tar: ignoring BFO_TAR_ENGINE=fast' front.err && pass "tar --use-bfo loads the installed plugin" ||
		fail "tar --use-bfo did not load the plugin: $(cat front.err)"
	cmp -s gnu.tar bfo.tar && pass "tar --use-bfo -c: the archive GNU tar writes" || fail "tar --use-bfo -c: archives differ"
	mkdir x1 x2
	(cd x1 && env -u BFO_TAR_PLUGIN -u BFO_TAR_REAL PATH="$P/bin:$PATH" tar --use-bfo -xf ../gnu.tar) &&
		(cd x2 && /usr/bin/tar -xf ../gnu.tar) && diff -r x1 x2 > /dev/null &&
		pass "tar --use-bfo -x: the tree GNU tar extracts" || fail "tar --use-bfo -x: trees differ"
else
	echo "note: the tar front is not in this build (BFO_TAR off, or a sanitizer build)"
fi

cmake --build "$BUILD" --target uninstall > uninstall.log 2>&1 || fail "uninstall: $(tail -3 uninstall.log)"
(cd "$P" && find . | sort) > after.list
cmp -s before.list after.list &&
	pass "the uninstall target removes every file and directory the install made, and only those" ||
	fail "uninstall: the prefix differs from before the install: $(diff before.list after.list | head -8)"
# A prefix the install made whole: the uninstall removes it whole.
P2=$W/made/prefix
cmake --install "$BUILD" --prefix "$P2" > install2.log 2>&1 || fail "cmake --install --prefix $P2: $(tail -3 install2.log)"
cmake --build "$BUILD" --target uninstall > uninstall2.log 2>&1 || fail "uninstall: $(tail -3 uninstall2.log)"
[ ! -e "$W/made" ] && pass "a prefix the install made is gone after the uninstall" ||
	fail "uninstall left: $(find "$W/made" | head -5)"

# ---------------------------------------------------------------- the .deb
if command -v cpack > /dev/null && command -v dpkg-deb > /dev/null; then
	cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$W/pkg" > cpack.log 2>&1 || fail "cpack: $(tail -5 cpack.log)"
	! grep -qi 'warning' cpack.log && ! grep -q $'\e' cpack.log && pass "cpack: no warning, no escape code" ||
		fail "cpack's output: $(grep -i -A3 'warning' cpack.log | cat -v | head -6)"
	deb=$(ls "$W"/pkg/bfo_*.deb 2> /dev/null | head -1)
	if [ -n "$deb" ]; then
		dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' > deb.list
		for f in /usr/bin/bfo /usr/include/bfo.h /usr/lib/pkgconfig/bfo.pc /usr/share/man/man1/bfo.1 \
			 /usr/share/man/man1/bfo-cp.1 /usr/share/man/man1/bfo-recv.1; do
			grep -qx "$f" deb.list || fail "$(basename "$deb") lacks $f"
		done
		grep -q '^/usr/lib/.*libbfo\.so\.0$' deb.list || fail "$(basename "$deb") lacks libbfo.so.0"
		! grep -qx '/usr/bin/tar' deb.list && pass "$(basename "$deb"): bfo, libbfo, bfo.h, bfo.pc, man pages; no /usr/bin/tar" ||
			fail "$(basename "$deb") would replace the system's /usr/bin/tar"
		if [ -e "$BUILD/libbfo_tar.so" ]; then
			grep -qx /usr/bin/bfo-tar deb.list && grep -qx /usr/lib/bfo-tar/libbfo_tar.so deb.list &&
				pass "the .deb holds the tar front as /usr/bin/bfo-tar" || fail "the .deb lacks the tar front"
			soname=$(readelf -d "$BUILD/libbfo_tar.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
			[ "$soname" = libbfo_tar.so.0 ] && grep -qx /usr/lib/bfo-tar/libbfo_tar.so.0 deb.list &&
				pass "the tar plugin's soname: libbfo_tar.so.0, in the .deb" ||
				fail "the tar plugin's soname: '$soname'"
		fi
		dpkg-deb -x "$deb" root
		grep -qx 'prefix=/usr' root/usr/lib/pkgconfig/bfo.pc && ! grep -q rpath root/usr/lib/pkgconfig/bfo.pc &&
			pass "the .deb's bfo.pc: prefix=/usr, no rpath" ||
			fail "the .deb's bfo.pc: $(grep -E '^prefix|^Libs' root/usr/lib/pkgconfig/bfo.pc)"
		check_read "$W/root/usr/bin/bfo" "the .deb's bfo, unpacked,"
		if command -v apt-get > /dev/null; then
			apt-get -s install "$deb" > apt.log 2>&1 && grep -q '^Inst bfo ' apt.log &&
				pass "apt-get -s install ./$(basename "$deb"): accepted" ||
				echo "note: apt-get -s install: $(tail -2 apt.log)"
		fi
	else
		fail "cpack made no .deb: $(tail -5 cpack.log)"
	fi
else
	echo "note: cpack or dpkg-deb missing: the .deb not tested"
fi

[ $FAILS = 0 ] && { echo "all passed"; exit 0; }
echo "$FAILS failed"
exit 1
