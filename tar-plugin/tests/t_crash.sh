#!/bin/bash
# t_crash: tar --use-bfo -x killed (SIGKILL) before any syscall that changes
# the tree, then `bfo recover DST`: every file is absent, its old version
# whole or its new version whole (bytes, mode, mtime), and nothing else is
# there (no empty or partial file tar made, no temporary, no journal).
# bfo-native's t_crashpoints runs tar once cleanly under `strace -c` (the
# result is the new state, which must also be plain tar's tree), then for
# every syscall of its set and every N up to the clean run's count kills
# tar with `strace -e inject=SYSCALL:signal=KILL:when=N`, DST restored to
# its old state each time, runs `bfo recover DST` (killed once at a point
# of its own, then to the end) and checks every path.
# The archive: directories, files of 0 B to 1.2 MiB (one above the
# plugin's 1 MiB buffer: tar writes that one itself), modes 600/644/755, a
# relative symlink (no '..': a placeholder is plain tar's, README), a hard
# link, an empty file, an empty directory.  Two fronts:
#  (a) into an empty directory;
#  (b) into a directory holding older versions of the archive's regular
#      files (one of them a symlink, one the hard link's source, the large
#      one), which must end old or new, never gone, and files the archive
#      does not have, which must stay.  (Older entries at the names of the
#      archive's symlinks and hard links are replaced by a rename of the
#      plugin's own: README, "What a kill leaves".)
# BFO_CRASH_MAX caps the points per syscall (t_crashpoints: a sample, said
# so), for a sanitizer run only; CI takes every point.
. "$(dirname "$0")/lib.sh"
unset BFO_TAR_EXTRACT BFO_TAR_DURABILITY BFO_TAR_STATS
need_strace
CP=${CRASHPOINTS:-}
[ -n "$CP" ] && [ -x "$CP" ] ||
	{ echo "skip: no t_crashpoints (CRASHPOINTS=$CP: build bfo-native with its tests)"; exit 77; }
cd "$W"

umask 022
mkdir -p src/d1/sub src/d2 src/empty
head -c 10 /dev/urandom > src/a
head -c 4096 /dev/urandom > src/d1/c
head -c 5000 /dev/urandom > src/d1/d
head -c 200000 /dev/urandom > src/d1/sub/e
head -c 1200000 /dev/urandom > src/d2/big
: > src/d2/zero
chmod 755 src/d1/c; chmod 600 src/d1/d
ln -s sub/e src/d1/lnk
ln src/a src/d2/a.hard
touch -d '2001-02-03 04:05:06' src/a src/d1/c src/d1/d src/d1/sub/e src/d2/big src/d2/zero
# sorted by name: ./a is the regular member, ./d2/a.hard the hard link
"$GNUTAR" --sort=name -cf t.tar -C src .

mkdir old-empty
mkdir -p old/d1/sub old/d2 old/mine
echo "old a" > old/a
head -c 3000 /dev/urandom > old/d1/c; chmod 640 old/d1/c
ln -s c old/d1/d
head -c 300000 /dev/urandom > old/d1/sub/e
head -c 7 /dev/urandom > old/d2/big
echo "was not empty" > old/d2/zero
echo "mine" > old/mine/x
echo "keep" > old/d1/keep
touch -d '2000-01-01' old/a old/d1/c old/d1/sub/e old/d2/big old/d2/zero old/mine/x old/d1/keep

# The new state must be plain tar's tree (nothing else left: no temporary,
# no journal), with BFO_TAR_DURABILITY=none (replacements renamed by the
# plugin itself) and as an ordinary user too.
if [ "$(id -u)" = 0 ]; then AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --); else AS=(); fi
cp -L "$(dirname "$PLUGIN")/libbfo.so.0" "$PLUGIN" "$W/" && chmod 755 "$W" && chmod a+r "$W"/*.so* t.tar
same_as_plain() {  # same_as_plain OLD WHO [VAR=VALUE...]
	local o=$1 who=$2; shift 2
	rm -rf p b; cp -a "$o" p; cp -a "$o" b
	if [ "$who" = user ]; then chown -R 65534:65534 p b; else who=$(id -un); fi
	local as=(); [ "$who" = user ] && as=("${AS[@]}")
	(cd p && "${as[@]}" "$GNUTAR" -xf ../t.tar) || fail "plain tar -x into $o as $who"
	(cd b && "${as[@]}" env "$@" BFO_TAR_STATS="$W/st" LD_PRELOAD="$W/libbfo_tar.so" "$GNUTAR" -xf ../t.tar) ||
		fail "tar with the plugin -x into $o as $who $*"
	if diff <(tree_sig p) <(tree_sig b) > sig.diff; then
		pass "into $o as $who${*:+ $*}: plain tar's tree ($(stat_of st xlinked) files linked, $(stat_of st xreplaced) replaced through the journal, $(stat_of st xrenamed) renamed)"
	else
		fail "into $o as $who${*:+ $*}: trees differ"; head -5 sig.diff
	fi
}
for o in old-empty old; do
	same_as_plain $o root BFO_TAR_DURABILITY=none
	[ ${#AS[@]} = 0 ] || same_as_plain $o user
	same_as_plain $o root
done
[ "$(stat_of st xreplaced)" -ge 6 ] && pass "older versions replaced through the journal: $(stat_of st xreplaced)" ||
	fail "only $(stat_of st xreplaced) files replaced through the journal"

front() {  # front NAME OLD
	local out=$W/cp-$1.out
	"$CP" --run "tar --use-bfo -x ($1)" "$W/$2" "$W/dst" -- \
		env LD_PRELOAD="$PLUGIN" "$GNUTAR" -xf "$W/t.tar" -C "$W/dst" > "$out" 2>&1
	local rc=$?
	grep -E "seed|points|FAIL" "$out"
	case $rc in
	0) grep -q " 0 killed" "$out" && fail "$1: no run was killed" || pass "$1: every crash point old or new and whole" ;;
	77) echo "skip: $(tail -1 "$out")"; exit 77 ;;
	*) fail "$1: t_crashpoints exited $rc" ;;
	esac
}
front "into an empty directory" old-empty
front "over older versions" old
finish
