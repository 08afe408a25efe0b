# Shared by the tar-plugin tests (sourced).  Each test compares GNU tar
# with and without the plugin on the same tree; exit 77 = skipped.
set -u
TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FRONT=${FRONT:-$TESTS/../bin/tar}
PLUGIN=${PLUGIN:?PLUGIN must name libbfo_tar.so}
export BFO_TAR_PLUGIN=$PLUGIN
GNUTAR=${GNUTAR:-/usr/bin/tar}
export BFO_TAR_REAL=$GNUTAR
W=$(mktemp -d "${TMPDIR:-/tmp}/bfo-tar-test.XXXXXX")
trap 'chmod -R u+rwx "$W" 2>/dev/null; rm -rf "$W"' EXIT
FAILS=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
finish() { [ $FAILS = 0 ] && { echo "all passed"; exit 0; }; echo "$FAILS failed"; exit 1; }
"$GNUTAR" --version 2>/dev/null | grep -q 'GNU tar' || { echo "skip: no GNU tar at $GNUTAR"; exit 77; }

# rand_file PATH SIZE: SIZE random bytes.
rand_file() { head -c "$2" /dev/urandom > "$1"; }

# make_tree DIR: directories with many small files, hard links, symlinks,
# an empty dir, long names, a sparse file, a large file, an empty file,
# odd names, xattrs when the file system takes them.
make_tree() {
	local t=$1 d i
	mkdir -p "$t"
	for d in 0 1 2 3 4 5; do
		mkdir -p "$t/dir$d/sub"
		for i in $(seq 1 120); do rand_file "$t/dir$d/f$i" $(( (i * 523 + d * 97) % 9000 )); done
		for i in 1 2 3; do rand_file "$t/dir$d/sub/s$i" 700; done
	done
	mkdir -p "$t/empty" "$t/$(printf 'L%.0s' $(seq 1 120))/$(printf 'M%.0s' $(seq 1 130))"
	rand_file "$t/$(printf 'L%.0s' $(seq 1 120))/$(printf 'M%.0s' $(seq 1 130))/$(printf 'N%.0s' $(seq 1 200))" 3000
	ln "$t/dir1/f5" "$t/dir2/hardlink-to-f5"
	ln "$t/dir3/f7" "$t/dir3/f7-again"
	ln -s ../dir1/f1 "$t/dir0/symlink"
	ln -s nowhere "$t/dir0/dangling"
	: > "$t/dir4/empty-file"
	printf 'x' > "$t/dir4/sp ace & 'quote'"
	rand_file "$t/dir5/large" $((3 * 1024 * 1024))
	truncate -s 5M "$t/dir5/sparse"; printf 'data' | dd of="$t/dir5/sparse" bs=1 seek=1000000 conv=notrunc 2>/dev/null
	mkfifo "$t/dir4/fifo"
	if setfattr -n user.bfo -v value "$t/dir0/f1" 2>/dev/null; then
		setfattr -n user.other -v 123 "$t/dir1/f2"
	fi
	touch -d '2001-02-03 04:05:06' "$t/dir0/f2"
}

# stats FILE: the plugin's counter NAME from the last line.
stat_of() { tail -1 "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# need_strace: exit 77 (skipped) where strace is missing or cannot trace.
need_strace() {
	command -v strace > /dev/null || { echo "skip: no strace"; exit 77; }
	strace -f -o /dev/null true 2> /dev/null || { echo "skip: strace cannot trace here"; exit 77; }
}

# calls TRACE 'name|name...': the calls of any of those names in an strace -f log.
calls() { grep -cE "^[0-9]+ +($2)\(" "$1"; }

# tree_sig DIR: every entry's type, mode, size, owner, mtime, link count and
# symlink target, and every regular file's MD5 (what two trees must share).
tree_sig() {
	(cd "$1" && find . -mindepth 1 -printf '%y %m %s %U %G %T@ %n %p -> %l\n' | LC_ALL=C sort &&
	 find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
}
