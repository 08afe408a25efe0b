#!/bin/bash
# t_create: archives made with --use-bfo are byte-identical to plain GNU
# tar's for every format, sort order, compression and selection option
# (exit status and messages too), and the plugin really served the files.
. "$(dirname "$0")/lib.sh"
cd "$W"
make_tree tree
printf 'tree/dir1/f3\0tree/dir2\0tree/dir5/large\0tree/dir0/symlink\0' > list0
cases=(
	"-cf A tree"
	"--format=gnu -cf A tree"
	"--format=posix -cf A tree"
	"--format=ustar -cf A tree/dir0 tree/dir1 tree/dir2 tree/dir3"
	"--format=oldgnu --sort=name -cf A tree"
	"--sort=name -cf A tree"
	"--sort=inode -cf A tree"
	"--sort=none -cf A tree"
	"-czf A tree"
	"-cjf A tree"
	"-cJf A tree"
	"--exclude=f1* --exclude=sub -cf A tree"
	"--null -T list0 -cf A"
	"-S -cf A tree"
	"--sparse --sparse-version=0.0 --format=posix --pax-option=delete=atime,delete=ctime -cf A tree"
	"--xattrs --format=posix -cf A tree"
	"-h -cf A tree/dir0"
	"--hard-dereference -cf A tree"
	"-C tree -cf A dir1 dir3"
	"--numeric-owner --owner=0 --group=0 -cf A tree"
	"--sort=name -cf - tree"
)
served_total=0
for c in "${cases[@]}"; do
	rm -f A B plain.out bfo.out st
	read -r -a args <<<"$c"
	pa=("${args[@]/#A/$W/P.tar}"); ba=("${args[@]/#A/$W/B.tar}")
	"$FRONT" "${pa[@]}" > plain.out 2> plain.err; prc=$?
	BFO_TAR_STATS=$W/st "$FRONT" --use-bfo "${ba[@]}" > bfo.out 2> bfo.err; brc=$?
	if [ "${args[-2]}" = - ] || [[ "$c" == *"-cf - "* ]]; then
		cmp -s plain.out bfo.out || { fail "[$c] stdout archives differ"; continue; }
	else
		cmp -s P.tar B.tar || { fail "[$c] archives differ"; continue; }
	fi
	[ $prc = $brc ] || { fail "[$c] exit $prc vs $brc"; continue; }
	cmp -s plain.err bfo.err || { fail "[$c] messages differ"; diff plain.err bfo.err | head; continue; }
	s=$(stat_of st served)
	served_total=$((served_total + ${s:-0}))
	pass "[$c] same archive, exit $prc, served ${s:-0}"
	rm -f P.tar B.tar
done
# A tree that is all small files must be served entirely from batches.
BFO_TAR_STATS=$W/st2 "$FRONT" --use-bfo -cf B.tar tree/dir1 tree/dir2
s=$(stat_of st2 served); f=$(find tree/dir1 tree/dir2 -type f -size +0 | wc -l)
[ "${s:-0}" -ge $((f - 2)) ] && pass "served $s of $f files" || fail "served ${s:-0} of $f files"
[ $served_total -gt 0 ] || fail "the plugin served nothing"
# Many lots through one open libbfo batch: a 16 MiB arena (lots of 2 MiB,
# three being read, at most 12 MiB in live lots) over 24 MiB of files.
for d in 0 1 2 3; do mkdir -p lots/d$d; for i in $(seq 1 750); do rand_file lots/d$d/f$i $(( 1000 + (i * 4099 + d * 577) % 15000 )); done; done
"$FRONT" -cf P.tar lots
BFO_TAR_ARENA_MB=16 BFO_TAR_STATS=$W/st3 "$FRONT" --use-bfo -cf B.tar lots
cmp -s P.tar B.tar && pass "16 MiB arena: same archive" || fail "16 MiB arena: archives differ"
[ "$(stat_of st3 served)" = 3000 ] && [ "$(stat_of st3 batches)" -ge 6 ] &&
	pass "16 MiB arena: all $(stat_of st3 served) files served, in $(stat_of st3 batches) lots" ||
	fail "16 MiB arena: served $(stat_of st3 served) of 3000 files in $(stat_of st3 batches) lots"
# Its four subdirectories were handed to libbfo's directory read-ahead, each
# once (how many its threads had read by tar's exit depends on how they were
# scheduled: at most the four, none twice).
dh=$(stat_of st3 dirs_handed); da=$(stat_of st3 dirs_ahead)
[ "${dh:-0}" = 4 ] && [ "${da:-5}" -le 4 ] && pass "16 MiB arena: 4 directories handed to the read-ahead, $da read by tar's exit" ||
	fail "16 MiB arena: ${dh:-none} directories handed to the read-ahead (not 4), ${da:-none} read"
rm -rf P.tar B.tar lots
# --listed-incremental: level 0, then level 1 after changes.  GNU tar's own
# incremental archives differ from run to run (directory dumps), so these
# are compared by members (tar -tv) and by what they extract to.
same_incremental() {
	"$GNUTAR" -tvf "$1" | sort > "$1.lst"; "$GNUTAR" -tvf "$2" | sort > "$2.lst"
	cmp -s "$1.lst" "$2.lst" || return 1
	rm -rf x1 x2; mkdir x1 x2
	"$GNUTAR" -C x1 -xf "$1" && "$GNUTAR" -C x2 -xf "$2" && [ "$(tree_sig x1)" = "$(tree_sig x2)" ]
}
cp -a tree tree-inc
for r in plain bfo; do
	rm -f s.$r; [ $r = plain ] && T=("$FRONT") || T=("$FRONT" --use-bfo)
	"${T[@]}" --listed-incremental=s.$r -cf L0.$r tree-inc
done
same_incremental L0.plain L0.bfo && pass "listed-incremental level 0" || fail "listed-incremental level 0 differs"
sleep 1; rand_file tree-inc/dir1/f9 1234; rand_file tree-inc/dir2/new 55; rm tree-inc/dir3/f1
for r in plain bfo; do
	cp s.plain s1.$r; [ $r = plain ] && T=("$FRONT") || T=("$FRONT" --use-bfo)
	"${T[@]}" --listed-incremental=s1.$r -cf L1.$r tree-inc
done
same_incremental L1.plain L1.bfo && pass "listed-incremental level 1" || fail "listed-incremental level 1 differs"
finish
