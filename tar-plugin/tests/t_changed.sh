#!/bin/bash
# t_changed: tar's own checks still fire with the plugin.
#  - a file that grows while tar reads it: "file changed as we read it",
#    exit 1, same archive (the bytes up to the size tar saw);
#  - a file rewritten after the plugin read it ahead and before tar opens
#    it: the plugin's copy is not used (tar archives the new bytes);
#  - a file removed before tar reaches it, an unreadable file (as an
#    unprivileged user): same messages and exit status as plain tar.
. "$(dirname "$0")/lib.sh"
cd "$W"
run_both() {   # run_both NAME SETUP-CMD TAR-ARGS...: plain then --use-bfo
	local name=$1 setup=$2; shift 2
	rm -rf t; cp -a tree0 t; eval "$setup"
	"$FRONT" "$@" -f "$W/$name.plain" > /dev/null 2> "$name.plain.err"; echo $? > "$name.plain.rc"
	rm -rf t; cp -a tree0 t; eval "$setup"
	BFO_TAR_STATS=$W/$name.st "$FRONT" --use-bfo "$@" -f "$W/$name.bfo" > /dev/null 2> "$name.bfo.err"
	echo $? > "$name.bfo.rc"
}
check() {      # check NAME WHAT
	local n=$1
	cmp -s "$n.plain" "$n.bfo" || { fail "$2: archives differ"; return 1; }
	cmp -s "$n.plain.rc" "$n.bfo.rc" || { fail "$2: exit $(cat $n.plain.rc) vs $(cat $n.bfo.rc)"; return 1; }
	cmp -s "$n.plain.err" "$n.bfo.err" || { fail "$2: messages differ"; diff "$n.plain.err" "$n.bfo.err"; return 1; }
	pass "$2 (exit $(cat $n.bfo.rc): $(head -1 $n.bfo.err))"
}

mkdir -p tree0/d
rand_file tree0/d/a-first 60000
rand_file tree0/d/grows 300000
printf 'OLDOLD' > tree0/d/z-late
for i in 1 2 3 4 5 6; do rand_file tree0/d/m$i 3000; done
touch -d @1000000000 tree0/d/* tree0/d tree0

# Appends at every record tar writes while it reads "grows".  The mtime is
# put back each time: the header's mtime must not depend on the wall clock
# (two runs a second apart made different archives, with or without the
# plugin); the ctime still moves, so tar still sees the change.
run_both grow '' --sort=name --checkpoint=1 \
	--checkpoint-action='exec=sh -c "[ -e t/d/grows ] && printf x >> t/d/grows && touch -d @1000000000 t/d/grows; true"' -c t
check grow "file grows while read"
grep -q 'file changed as we read it' grow.bfo.err || fail "no 'file changed as we read it'"
[ "$(stat_of grow.st served)" -ge 8 ] && pass "the changing file was served from the batch" || fail "nothing served"

# Rewritten (same mtime, new ctime) at tar's first record: after the read-ahead.
run_both late 'rm -f flag' --sort=name --checkpoint=1 \
	--checkpoint-action='exec=sh -c "[ -e flag ] || { touch flag; printf NEWNEW > t/d/z-late; touch -d @1000000000 t/d/z-late; }"' -c t
rm -f flag
check late "file rewritten after the read-ahead"
"$GNUTAR" -xOf late.bfo t/d/z-late | grep -q NEWNEW && pass "new bytes archived" || fail "old bytes archived"
[ "$(stat_of late.st fallback)" -ge 1 ] && pass "the stale copy was refused" || fail "stale copy not detected"

run_both gone '' --sort=name --checkpoint=1 \
	--checkpoint-action='exec=sh -c "rm -f t/d/m5"' -c t
check gone "file removed before tar reads it"

if [ "$(id -u)" = 0 ]; then
	command -v setpriv > /dev/null || { echo "skip unreadable: no setpriv"; finish; }
	chmod 755 "$W"
	AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	"${AS[@]}" test -r "$PLUGIN" -a -x "$FRONT" || { echo "note: plugin not readable by nobody, unreadable case skipped"; finish; }
else
	AS=()
fi
rm -rf t; cp -a tree0 t; chmod 000 t/d/m2; chmod -R a+rX t; chmod 000 t/d/m2; chmod 777 "$W"
(cd "$W" && "${AS[@]}" "$FRONT" --sort=name -cf "$W/unr.plain" t > /dev/null 2> "$W/unr.plain.err"; echo $? > "$W/unr.plain.rc")
(cd "$W" && "${AS[@]}" env BFO_TAR_STATS=$W/unr.st "$FRONT" --use-bfo --sort=name -cf "$W/unr.bfo" t > /dev/null 2> "$W/unr.bfo.err"; echo $? > "$W/unr.bfo.rc")
check unr "unreadable file"
finish
