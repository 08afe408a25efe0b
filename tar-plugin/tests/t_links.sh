#!/bin/bash
# t_links: GNU tar's delayed links with and without the plugin.  tar
# extracts a symlink whose target is absolute or holds '..' (and hard links
# to it) as an empty placeholder file, records the placeholder's device and
# inode, and at the end replaces whatever still has them by the link.  When
# a later member of that name replaces the placeholder (tar unlinks it and
# creates the file), plain tar on ext4 gets the freed inode back and ends
# with the link; on tmpfs it ends with the file.  The plugin must end with
# the same: it must keep no file tar creates open past tar's own close.
# Archives are built by GNU tar itself (members appended with -r); each is
# extracted with and without the plugin, each time on a fresh file system
# (ext4, tmpfs, an ext4 mounted below tar's directory): the same tree
# (names, types, modes, owners, times, link counts, targets, contents), the
# same messages and exit status.  Options: default, --overwrite,
# --unlink-first, --keep-old-files, -k, --skip-old-files,
# --keep-newer-files, --recursive-unlink, -P.  Needs root (mounts).
. "$(dirname "$0")/lib.sh"
unset BFO_TAR_EXTRACT
cd "$W"

# Whether the freed inode comes back depends on the file system's state
# (ext4 takes the lowest free inode of the directory's group), so each
# extraction gets a fresh file system of its own, the same for both:
# FS=ext4 (a new image, the placeholder's inode reused), FS=tmpfs (never
# reused), FS=sub (tar in a tmpfs, the members in an ext4 mounted below it).
[ "$(id -u)" = 0 ] || { echo "skip: needs root to mount a fresh file system per extraction"; exit 77; }
mkdir -p img.m
if ! { truncate -s 24M img && mkfs.ext4 -q -F img && mount -o loop img img.m && umount img.m; } 2>/dev/null; then
	echo "skip: cannot mount a loop ext4 image here"; exit 77
fi
trap 'for d in "$W"/p/mnt "$W"/b/mnt "$W"/p "$W"/b; do mountpoint -q "$d" && umount "$d"; done
	rm -rf "$W"' EXIT
fresh() {  # fresh DIR: mount a new file system of type $FS on DIR
	rm -rf "$1"; mkdir "$1"
	case $FS in
	ext4) cp --sparse=always img "$1.img" && mount -o loop "$1.img" "$1" && rm -rf "$1/lost+found" ;;
	tmpfs) mount -t tmpfs -o size=16m tmpfs "$1" ;;
	sub) mount -t tmpfs -o size=16m tmpfs "$1" && mkdir "$1/mnt" && cp --sparse=always img "$1.img" &&
		mount -o loop "$1.img" "$1/mnt" && rm -rf "$1/mnt/lost+found" ;;
	esac
}
gone() { if [ "$FS" = sub ]; then umount "$1/mnt"; fi; umount "$1"; rm -f "$1.img"; }

# lcase NAME ARCHIVE [tar options...]; NODIRTIME=1: directories' times
# not compared (those tar leaves at the time of extraction).
dirtime() { if [ -n "${NODIRTIME:-}" ]; then awk '$1 == "d" { $6 = "-" } { print }'; else cat; fi; }
lcase() {
	local name="$1 on $FS" ar=$2; shift 2
	fresh p; (cd p && "$FRONT" "$@" -xf "$ar" > ../p.out 2>&1; echo $? > ../p.rc); tree_sig p | dirtime > p.sig; gone p
	fresh b; (cd b && BFO_TAR_STATS=$W/st "$FRONT" --use-bfo "$@" -xf "$ar" > ../b.out 2>&1; echo $? > ../b.rc)
	tree_sig b | dirtime > b.sig; gone b
	if ! cmp -s p.rc b.rc; then fail "$name: exit $(cat p.rc) plain, $(cat b.rc) with the plugin"; return; fi
	if ! cmp -s p.out b.out; then fail "$name: messages differ"; diff p.out b.out | head -5; return; fi
	if ! diff p.sig b.sig > sig.diff; then fail "$name: trees differ"; head -6 sig.diff; return; fi
	pass "$name (exit $(cat p.rc), $(stat_of st xfiles) files through the plugin)"
}

# mk ARCHIVE DIR...: DIR's contents as members, each DIR appended in turn.
mk() {
	local ar=$1 d; shift
	rm -f "$ar"
	for d in "$@"; do
		if [ -e "$ar" ]; then "$GNUTAR" -rf "$ar" -C "$d" .; else "$GNUTAR" -cf "$ar" -C "$d" .; fi
	done
}

mkdir -p s/abs s/dot s/hard s/sub/d s/file s/many/m s/two
ln -s /nonexistent/abs/target s/abs/lnk
ln -s ../../outside/target s/dot/lnk
ln -s /nonexistent/abs/target s/hard/lnk; ln -P s/hard/lnk s/hard/h
ln -s /abs/in/sub s/sub/d/lnk; ln -s ../up s/sub/d/up
echo "a regular file named lnk" > s/file/lnk
mkdir -p s/file/d; echo "file d/lnk" > s/file/d/lnk; echo "file d/up" > s/file/d/up; echo "file h" > s/file/h
for i in $(seq 1 1500); do echo $i > s/many/m/f$i; done
ln -s /x s/two/a; ln -s ../y s/two/b
touch -d '2001-02-03 04:05:06' s/file/lnk
chown 1234:4321 s/file/h 2>/dev/null; chmod 0600 s/file/d/lnk

mk abs.tar s/abs s/file              # lnk -> /abs, then the file lnk
mk dot.tar s/dot s/file              # lnk -> ../.., then the file lnk
mk hard.tar s/hard s/file            # lnk -> /abs and h, a hard link to it, then files lnk and h
mk hardfirst.tar s/hard s/abs        # the hard-linked pair, then lnk -> /abs again
mk sub.tar s/sub s/many s/file       # in a directory, 1500 files between (flushes, the flusher)
mk rev.tar s/file s/abs s/dot        # the file first, then symlinks of its name
mk two.tar s/two s/abs s/file s/two  # several placeholders, replaced and made again

FS=ext4
for ar in abs dot hard hardfirst sub rev two; do
	for opt in "" --overwrite --unlink-first --keep-old-files -k --skip-old-files --keep-newer-files \
		--recursive-unlink -P; do
		lcase "$ar.tar ${opt:-(default)}" "$W/$ar.tar" $opt
	done
done
# The placeholder's inode comes back on ext4: plain tar ends with the link.
fresh p; (cd p && "$GNUTAR" -xf "$W/abs.tar"); [ -L p/lnk ] && l=1 || l=0; gone p
[ $l = 1 ] && pass "ext4: plain tar leaves the symlink lnk" || fail "ext4: plain tar left no symlink lnk"
FS=tmpfs
for ar in abs hard sub rev two; do
	for opt in "" --unlink-first; do lcase "$ar.tar ${opt:-(default)}" "$W/$ar.tar" $opt; done
done
# The members on a file system mounted below tar's directory: the plugin's
# handle on that file system must not be one of the files either.
FS=sub
"$GNUTAR" --transform 's,^\.,mnt,' -cf mnt.tar -C s/hard . -C ../many . -C ../file .
"$GNUTAR" --transform 's,^\.,mnt,' -rf mnt.tar -C s/two .
lcase "mnt.tar (default)" "$W/mnt.tar"
NODIRTIME=1 lcase "mnt.tar --unlink-first" "$W/mnt.tar" --unlink-first   # it leaves mnt's time at "now"
[ "$(stat_of st xfiles)" -ge 1000 ] && pass "below a mount point: $(stat_of st xfiles) files through the plugin" ||
	fail "below a mount point: only $(stat_of st xfiles) files through the plugin"
finish
