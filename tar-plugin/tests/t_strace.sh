#!/bin/bash
# t_strace: with the plugin, tar's thread no longer reads the files one by
# one: the data comes in batched I/O from libbfo's threads (io_uring
# submissions or large preads of merged regions), far fewer I/O system
# calls than files, and the archive stays the same.
. "$(dirname "$0")/lib.sh"
need_strace
cd "$W"
N=2000
mkdir -p t/a t/b t/c t/d
for i in $(seq 1 $N); do echo "$i" > "t/$(echo abcd | cut -c$((i % 4 + 1)))/f$i"; done
for f in t/*/f*; do head -c 4000 /dev/urandom >> "$f"; done
sync
TRACE=(strace -f -qq -e trace=read,pread64,preadv,preadv2,io_uring_enter -o)
"${TRACE[@]}" plain.tr "$GNUTAR" -cf plain.tar t
BFO_TAR_STATS=$W/st "${TRACE[@]}" bfo.tr -E LD_PRELOAD="$PLUGIN" "$GNUTAR" -cf bfo.tar t
cmp -s plain.tar bfo.tar && pass "same archive" || fail "archives differ"
main_reads() {  # read() calls of the first (tar's) thread
	local pid; pid=$(head -1 "$1" | cut -d' ' -f1)
	grep -cE "^$pid +read\(" "$1"
}
pr=$(main_reads plain.tr); br=$(main_reads bfo.tr); bio=$(calls bfo.tr 'pread64|preadv2?|io_uring_enter')
echo "plain tar: $pr read() calls on its thread; with the plugin: $br, plus $bio batched I/O calls ($(tail -1 st))"
[ "$pr" -ge $N ] && pass "plain tar reads file by file ($pr reads)" || fail "plain tar made only $pr reads?"
[ "$br" -lt $((N / 20)) ] && pass "tar's thread made $br reads" || fail "tar's thread still made $br reads"
[ "$bio" -gt 0 ] && [ "$bio" -lt $((N / 4)) ] && pass "$bio I/O submissions for $N files" || fail "$bio I/O submissions for $N files"
[ "$(stat_of st served)" -ge $((N - 10)) ] && pass "served $(stat_of st served) files" || fail "served $(stat_of st served)"
finish
