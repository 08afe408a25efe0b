#!/bin/bash
# t_extract: tar -x with and without the plugin on the same archives gives
# the same tree (types, modes, sizes, owners, mtimes, link counts, symlink
# targets, contents), the same messages and exit status, `tar -d` finds no
# difference, and the plugin really took the files' writes (xfiles).
# Cases: formats gnu/posix, -z, -p/--same-owner/--no-same-owner/-m, --xattrs,
# sparse -S, hard links, members repeated (overwritten) with default,
# --overwrite, -k and --keep-newer-files, '..' and absolute names, symlink
# tricks (a member through a symlink to outside), a member that cannot be
# written (a directory in its way), a file member replacing a directory,
# many files (several flushes), the archive read ahead (not through -z),
# BFO_TAR_EXTRACT=off, BFO_TAR_DURABILITY=none,
# and full file systems (tiny, filling up, filled by another process).
. "$(dirname "$0")/lib.sh"
unset BFO_TAR_EXTRACT        # on by default with --use-bfo
cd "$W"
make_tree src
mkdir -p many; for i in $(seq 1 2500); do printf '%s\n' "$i" > many/m$i; done
touch -d '2010-01-01 00:00:00' many/m7
chown 1234:4321 src/dir0/f3 2>/dev/null
chmod 4755 src/dir1/f4; chmod 0600 src/dir2/f6; chmod 0555 src/dir3/sub

# Directories tar creates implicitly (no member) get the time of extraction.
# Masked times are sorted again after masking (the order must not depend on them).
sig_filter() {
	if [ -n "${NOTIME:-}" ]; then awk '{ $6 = "-" } { print }'
	elif [ -n "${NODIRTIME:-}" ]; then awk '$1 == "d" { $6 = "-" } { print }'; else cat; fi
}

# xcase NAME ARCHIVE [tar options...]: extract into fresh dirs, compare.
xcase() {
	local name=$1 ar=$2; shift 2
	rm -rf p b; mkdir p b
	eval "${BETWEEN:-}"
	(cd p && "$FRONT" "$@" -xf "$ar" > ../p.out 2>&1; echo $? > ../p.rc)
	eval "${BETWEEN:-}"
	(cd b && BFO_TAR_STATS=$W/st "$FRONT" --use-bfo "$@" -xf "$ar" > ../b.out 2>&1; echo $? > ../b.rc)
	if ! cmp -s p.rc b.rc; then fail "$name: exit $(cat p.rc) plain, $(cat b.rc) with the plugin"; return; fi
	sed -i 's/ is [0-9.]* s in the future/ is N s in the future/' p.out b.out
	if ! cmp -s p.out b.out; then fail "$name: messages differ"; diff p.out b.out | head -5; return; fi
	if ! diff <(tree_sig p | sig_filter | LC_ALL=C sort) <(tree_sig b | sig_filter | LC_ALL=C sort) > sig.diff; then fail "$name: trees differ"; head -5 sig.diff; return; fi
	if [ -n "${XATTR:-}" ] && ! diff <(cd p && getfattr -R -d -m - . 2>/dev/null) <(cd b && getfattr -R -d -m - . 2>/dev/null) > /dev/null; then
		fail "$name: xattrs differ"; return; fi
	pass "$name (exit $(cat p.rc), $(stat_of st xfiles) files through the plugin, $(stat_of st xflushes) flushes)"
}

"$GNUTAR" -cf gnu.tar src
"$GNUTAR" --format=posix -cf posix.tar src many
"$GNUTAR" -czf z.tgz src
"$GNUTAR" -S -cf sparse.tar src/dir5
XATTR=1; "$GNUTAR" --xattrs -cf xattrs.tar src; unset XATTR
xcase "gnu" "$W/gnu.tar"
[ "$(stat_of st xfiles)" -ge 700 ] && pass "the plugin wrote $(stat_of st xfiles) files" || fail "the plugin wrote only $(stat_of st xfiles) files"
(cd b && "$GNUTAR" -df "$W/gnu.tar" > ../d.out 2>&1) && pass "tar -d: no difference" || { fail "tar -d reports differences"; head -5 d.out; }
xcase "posix + 2500 small files" "$W/posix.tar"
[ "$(stat_of st xflushes)" -ge 3 ] && pass "bounded queue: $(stat_of st xflushes) flushes" || fail "only $(stat_of st xflushes) flushes for 3000 files"
[ "$(stat_of st xbehind)" -ge 1 ] && pass "$(stat_of st xbehind) of them written by the flusher while tar went on (same tree as plain tar)" ||
	fail "no generation went to the flusher"
# A batch's data before its names: 3,100 files of 36 KiB are several
# generations of the flusher (1,024 files or 64 MiB each; at a soft
# descriptor limit of 1024, twelve of 254) and the final flush, and each
# one that names files first commits their data with a syncfs of its
# file system (early_syncfs), then links them: one per flush here (one
# file system), whatever the threads' timing.
mkdir -p mid; head -c $((3100 * 36864)) /dev/urandom | (cd mid && split -a 4 -b 36864 - f)
"$GNUTAR" -cf mid.tar mid
xcase "3100 files of 36 KiB, a syncfs before each batch's names" "$W/mid.tar"
[ "$(stat_of st early_syncfs)" -ge 3 ] && [ "$(stat_of st early_syncfs)" = "$(stat_of st xflushes)" ] &&
	pass "$(stat_of st early_syncfs) syncfs before the names of $(stat_of st xflushes) batches, $(stat_of st syncfs) at the end (same tree as plain tar)" ||
	fail "early_syncfs=$(stat_of st early_syncfs) for $(stat_of st xflushes) batches of 3100 files"
xcase "-z" "$W/z.tgz" -z
xcase "-p --same-owner" "$W/gnu.tar" -p --same-owner
xcase "--no-same-owner --no-same-permissions" "$W/gnu.tar" --no-same-owner --no-same-permissions
NOTIME=1 xcase "-m" "$W/gnu.tar" -m
NODIRTIME=1 xcase "sparse -S" "$W/sparse.tar"
# tar sets a directory's times when it leaves it, while the names of its
# files may still be pending (the plugin gives its times again after
# them); a member that comes back to it later (a symlink, a subdirectory)
# moves them, as in plain tar: its time is that of the extraction, not
# the archive's, in both trees.
mkdir -p rev/D rev/E; for i in 1 2 3; do echo $i > rev/D/f$i; echo $i > rev/E/g$i; done
ln -s f1 rev/D/zlink; mkdir rev/D/zsub; touch -d '2011-01-01' rev/D rev/E rev/D/zsub
"$GNUTAR" --no-recursion -cf rev.tar rev rev/D rev/D/f1 rev/D/f2 rev/D/f3 rev/E rev/E/g1 rev/E/g2 rev/E/g3 rev/D/zlink rev/D/zsub
NODIRTIME=1 xcase "a directory revisited after tar set its times" "$W/rev.tar"
T11=$(date -d '2011-01-01' +%s)
[ "$(stat -c %Y p/rev/D)" -gt "$T11" ] && [ "$(stat -c %Y b/rev/D)" -gt "$T11" ] &&
	[ "$(stat -c %Y b/rev/E)" = "$T11" ] && pass "its times moved in both trees (E kept the archive's)" ||
	fail "revisited directory: mtime $(stat -c %Y p/rev/D) plain, $(stat -c %Y b/rev/D) with the plugin, E $(stat -c %Y b/rev/E)"
XATTR=1 xcase "--xattrs" "$W/xattrs.tar" --xattrs

# Archive read-ahead: a regular-file archive is read ahead of tar (xread_ahead),
# one from a compressor's pipe is not; tar's own reads, and its seeks past
# the members it skips, give the same tree as plain tar.
mkdir -p big; for i in $(seq 1 24); do rand_file big/b$i $((1024 * 1024)); done
"$GNUTAR" -cf big.tar big src; gzip -1 -c big.tar > big.tgz
# (with the test hooks, tar waits for the read-ahead's first read: how
# much more it reads before tar ends depends on how the threads ran)
LD_PRELOAD=$TESTHOOKS xcase "a 36 MiB archive" "$W/big.tar"
ra=$(stat_of st xread_ahead); sz=$(stat -c %s big.tar)
[ "$ra" -gt 0 ] && [ "$ra" -le "$sz" ] && pass "archive read ahead of tar: $ra of $sz bytes" ||
	fail "xread_ahead=$ra for a $sz-byte archive"
echo big/b20 > one.list
NODIRTIME=1 xcase "one member of the 36 MiB archive (tar skips the rest)" "$W/big.tar" -T "$W/one.list"
[ -f b/big/b20 ] && [ ! -e b/big/b19 ] && pass "just that member" || fail "one member: $(ls b/big | head -3)"
xcase "the 36 MiB archive through -z" "$W/big.tgz" -z
[ "$(stat_of st xread_ahead)" = 0 ] && pass "-z: a pipe, nothing read ahead" ||
	fail "-z: xread_ahead=$(stat_of st xread_ahead)"

# The same names twice (an appended archive): second copies win / are kept.
mkdir -p v; echo old > v/a; echo older > v/b; touch -d '2030-01-01' v/b
"$GNUTAR" -cf dup.tar v; echo new-and-longer > v/a; echo newer > v/b; touch -d '2001-01-01' v/b
"$GNUTAR" -rf dup.tar v
xcase "member repeated" "$W/dup.tar"
xcase "member repeated, --overwrite" "$W/dup.tar" --overwrite
xcase "member repeated, -k" "$W/dup.tar" -k
xcase "member repeated, --keep-newer-files" "$W/dup.tar" --keep-newer-files

# Names with '..' and absolute names; a symlink to outside then a member
# through it; a file where a directory is in the way.
mkdir -p outside; echo keep > outside/victim
python3 - "$W" <<'PY'
import io, sys, tarfile
w = sys.argv[1]
def add(t, name, data=b"", **kw):
    i = tarfile.TarInfo(name); i.size = len(data); i.mtime = 1000000000
    for k, v in kw.items(): setattr(i, k, v)
    t.addfile(i, io.BytesIO(data) if data else None)
with tarfile.open(f"{w}/tricks.tar", "w", format=tarfile.GNU_FORMAT) as t:
    add(t, "ok/file", b"fine\n")
    add(t, "../escape", b"no\n")
    add(t, "ok/../../escape2", b"no\n")
    add(t, f"{w}/outside/abs", b"abs\n")
    add(t, "lnk", type=tarfile.SYMTYPE, linkname=f"{w}/outside")
    add(t, "lnk/victim", b"overwritten?\n")
    add(t, "rel", type=tarfile.SYMTYPE, linkname="../outside")
    add(t, "rel/victim2", b"through\n")
    add(t, "ok/dir/x", b"x\n")
    add(t, "ok/dir", b"a file where a directory is\n")
    add(t, "ok/last", b"last\n")
PY
NODIRTIME=1 xcase "'..', absolute names, symlink tricks" "$W/tricks.tar"
[ "$(cat outside/victim)" = keep ] && [ ! -e outside/abs ] && [ ! -e outside/victim2 ] && [ ! -e escape ] &&
	pass "nothing written outside" || fail "something was written outside: $(ls outside)"
BETWEEN='rm -f outside/abs outside/victim2; echo keep > outside/victim' NODIRTIME=1 xcase "-P (absolute names kept)" "$W/tricks.tar" -P
rm -f outside/abs outside/victim2; echo keep > outside/victim

# The escape hatch: BFO_TAR_EXTRACT=off is plain tar (nothing taken).
rm -rf p b; mkdir p b; (cd p && "$GNUTAR" -xf "$W/gnu.tar")
(cd b && BFO_TAR_EXTRACT=off BFO_TAR_STATS=$W/st "$FRONT" --use-bfo -xf "$W/gnu.tar")
[ "$(stat_of st xfiles)" = 0 ] && [ "$(stat_of st syncfs)" = 0 ] && diff <(tree_sig p) <(tree_sig b) > /dev/null &&
	pass "BFO_TAR_EXTRACT=off: plain tar (no file taken, no syncfs, same tree)" || fail "BFO_TAR_EXTRACT=off: xfiles=$(stat_of st xfiles)"

# Durability off: same tree, no syncfs.
rm -rf b; mkdir b
(cd b && BFO_TAR_DURABILITY=none BFO_TAR_STATS=$W/st "$FRONT" --use-bfo -xf "$W/gnu.tar")
[ "$(stat_of st syncfs)" = 0 ] && pass "BFO_TAR_DURABILITY=none: no syncfs" || fail "syncfs=$(stat_of st syncfs) with durability none"
(cd b && BFO_TAR_STATS=$W/st "$FRONT" --use-bfo -xf "$W/posix.tar")
[ "$(stat_of st syncfs)" -ge 1 ] && pass "default durability: $(stat_of st syncfs) syncfs at exit" || fail "no syncfs at exit"

# A full file system: tar's own writes meet it (the plugin queues data
# only while it surely fits), so the same "Wrote only N of M bytes" and
# "Cannot write: No space left on device" messages, the same exit status 2
# and the same files.  A tiny one (nothing fits) and one that fills up
# after a few thousand files went through the plugin's queue.
if [ "$(id -u)" = 0 ] && mkdir -p small && mount -t tmpfs -o size=64k tmpfs small 2>/dev/null; then
	umount small
	mkdir -p fill; for i in 1 2 3 4 5 6 7 8; do head -c 20000 /dev/urandom > fill/f$i; done
	"$GNUTAR" -cf fill.tar fill
	mkdir -p fill2/a fill2/b; for i in $(seq 1 1500); do head -c 4000 /dev/urandom > fill2/a/f$i; printf '%s\n' $i > fill2/b/g$i; done
	head -c 300000 /dev/urandom > fill2/big
	"$GNUTAR" -cf fill2.tar fill2
	full_case() {  # full_case SIZE ARCHIVE
		local d
		for d in p b; do
			rm -rf $d; mkdir $d; mount -t tmpfs -o size=$1 tmpfs $d
			(cd $d && if [ $d = p ]; then "$FRONT" -xf "$2"; else BFO_TAR_STATS=$W/st "$FRONT" --use-bfo -xf "$2"; fi \
				> "$W/$d.out" 2>&1; echo $? > "$W/$d.rc")
			tree_sig $d > $d.sig; umount $d
		done
		if [ "$(cat p.rc)" = 2 ] && cmp -s p.rc b.rc && cmp -s p.out b.out && cmp -s p.sig b.sig &&
			grep -q 'Cannot write: No space left on device' b.out; then
			pass "full file system ($1): exit 2, the same $(wc -l < b.out) messages and files as plain tar ($(stat_of st xfiles) files through the plugin)"
		else
			fail "full file system ($1): plain exit $(cat p.rc), plugin exit $(cat b.rc)"; diff p.out b.out | head -5; diff p.sig b.sig | head -5
		fi
	}
	full_case 64k "$W/fill.tar"
	full_case 12m "$W/fill2.tar"
	[ "$(stat_of st xfiles)" -ge 500 ] && pass "filling up: $(stat_of st xfiles) files went through the plugin first" ||
		fail "filling up: only $(stat_of st xfiles) files through the plugin"
	# Another process fills the disk while files wait in the queue (after
	# the free-space check): their writes fail at the flush, not in tar's
	# write().  Each is reported in tar's words before tar's last line,
	# and tar's status becomes 2, as tar does for its own write errors.
	mkdir -p race/a; for i in $(seq 1 300); do head -c 3000 /dev/urandom > race/a/f$i; done
	"$GNUTAR" -cf race.tar race
	rm -rf b; mkdir b; mount -t tmpfs -o size=20m tmpfs b
	(cd b && "$FRONT" --use-bfo --checkpoint=20 \
		--checkpoint-action='exec=sh -c "[ -e fillup ] || dd if=/dev/zero of=fillup bs=1M 2>/dev/null; true"' \
		-xf "$W/race.tar" > "$W/b.out" 2>&1; echo $? > "$W/b.rc")
	short=$(find b/race -type f -size -3000c | wc -l); umount b
	if [ "$(cat b.rc)" = 2 ] && [ "$short" -gt 0 ] &&
		[ "$(grep -c 'Cannot write: No space left on device' b.out)" = "$short" ] &&
		[ "$(tail -1 b.out)" = "tar: Exiting with failure status due to previous errors" ]; then
		pass "disk filled by another process during the queue: exit 2, all $short short files reported"
	else
		fail "disk filled during the queue: exit $(cat b.rc), $short short files"; tail -3 b.out
	fi
else
	echo "skip full-file-system cases: needs root to mount a small tmpfs"
fi
finish
