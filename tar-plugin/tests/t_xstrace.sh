#!/bin/bash
# t_xstrace: with the plugin, tar -x no longer writes the files record by
# record as it reads them: tar's write() calls for the members' data are
# taken by the plugin and each file goes out whole in one positioned write
# (pwrite64, most of them on the flusher thread while tar creates the next
# files; not io_uring, whose worker threads cost more CPU than the
# page-cache writes themselves), while the extracted tree (contents,
# modes, owners, mtimes) is the same as plain tar's.  As root, tar chowns
# every file; with the plugin only those whose owner that changes (one file
# of another owner, one setuid file of root's whose chown clears the bit
# before tar's chmod sets it again) are chowned.
. "$(dirname "$0")/lib.sh"
need_strace
cd "$W"
N=2000
mkdir -p t/a t/b t/c t/d
for i in $(seq 1 $N); do head -c $((1000 + i % 5000)) /dev/urandom > "t/$(echo abcd | cut -c$((i % 4 + 1)))/f$i"; done
chmod 600 t/a/f4; touch -d '2005-05-05 05:05:05' t/b/f1
chown 1234:4321 t/c/f2 2>/dev/null; chmod 4755 t/d/f3
"$GNUTAR" -cf t.tar t
mkdir p b
TRACE=(strace -f -qq -e trace=write,pwrite64,pwritev,pwritev2,io_uring_enter,fchown -o)
(cd p && "${TRACE[@]}" ../plain.tr "$GNUTAR" -xf ../t.tar) || fail "plain tar failed"
(cd b && BFO_TAR_STATS=$W/st "${TRACE[@]}" ../bfo.tr -E LD_PRELOAD="$PLUGIN" "$GNUTAR" -xf ../t.tar) || fail "tar with the plugin failed"
diff <(tree_sig p) <(tree_sig b) > sig.diff && pass "same tree (contents and metadata of $N files)" || { fail "trees differ"; head -5 sig.diff; }
file_writes() {  # write() calls to files (not stdout/stderr) of every thread
	grep -cE '^[0-9]+ +write\(([3-9]|[1-9][0-9]+),' "$1"
}
pw=$(file_writes plain.tr); bw=$(file_writes bfo.tr); bb=$(calls bfo.tr 'pwrite64|pwritev2?|io_uring_enter')
echo "plain tar: $pw write() calls to files; with the plugin: $bw, plus $bb positioned writes ($(tail -1 st))"
[ "$pw" -ge $N ] && pass "plain tar writes file by file ($pw writes)" || fail "plain tar made only $pw writes?"
[ "$bw" -lt $((N / 20)) ] && pass "with the plugin: $bw write() calls to files" || fail "with the plugin still $bw write() calls"
[ "$bb" -eq $N ] && [ "$pw" -gt $N ] && pass "one positioned write per file ($bb for $N files, plain tar $pw)" ||
	fail "$bb positioned writes for $N files (plain tar $pw)"
if [ "$(id -u)" = 0 ]; then
	pc=$(calls plain.tr fchown); bc=$(calls bfo.tr fchown)
	[ "$pc" -ge $N ] && [ "$bc" -eq 1 ] && pass "fchown: plain tar $pc calls, the plugin $bc (the file of uid 1234)" ||
		fail "fchown: plain tar $pc calls, the plugin $bc (expected N and 1)"
fi
[ "$(stat_of st xfiles)" -ge $N ] && pass "the plugin took $(stat_of st xfiles) files in $(stat_of st xflushes) flushes" ||
	fail "the plugin took only $(stat_of st xfiles) files"
finish
