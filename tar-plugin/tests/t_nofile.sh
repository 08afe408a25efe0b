#!/bin/bash
# t_nofile: tar with the plugin as an ordinary user at an ordinary
# descriptor limit.  As uid 65534 (when run as root; else as the user
# running it), under `ulimit -n 1024` (a login's default) and 256, over
# 5,200 files in 26 directories:
#  - tar --use-bfo -x gives the same tree as plain tar -x at the same limit
#    (types, modes, sizes, mtimes, bytes), exit 0 and no message, and the
#    plugin wrote the files (xfiles), its queue sized from the limit
#    (xqueue_files at most a quarter of it).  Before the budget, 1024
#    failed: "Cannot open: Too many open files" for most files, exit 2.
#  - tar --use-bfo -c makes the same archive as plain tar -c (cmp), exit 0,
#    with the files served by the plugin.
# And at 16 with all but five descriptors taken before tar starts (held
# by its parent): the queue, at its smallest, holds more than tar has
# left, so tar's opens meet EMFILE and the plugin gives the queue's
# descriptors back and opens again (xfd_waits) where tar would have failed
# the file; the same tree and archive as plain tar (the create side may
# fall back to libc: no context fits).
# The plugin never raises tar's limit: tar's child (--to-command) sees it.
. "$(dirname "$0")/lib.sh"
unset BFO_TAR_EXTRACT BFO_TAR_STATS

# A directory other users can reach, holding copies of the front, the
# plugin and its libbfo (the build tree may be below a private home).
R=$(mktemp -d /tmp/bfo-tar-nofile.XXXXXX)
trap 'chmod -R u+rwx "$W" "$R" 2>/dev/null; rm -rf "$W" "$R"' EXIT
chmod 755 "$R"
mkdir "$R/bin"
cp "$FRONT" "$R/bin/tar"
cp "$PLUGIN" "$R/bin/libbfo_tar.so"
cp -L "$(dirname "$PLUGIN")/libbfo.so.0" "$R/bin/" 2>/dev/null ||
	{ echo "skip: no libbfo.so.0 beside $PLUGIN"; exit 77; }
chmod -R a+rX "$R/bin"
export BFO_TAR_PLUGIN=$R/bin/libbfo_tar.so
XFRONT=$R/bin/tar

if [ "$(id -u)" = 0 ]; then
	AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	WHO="uid 65534"
else
	AS=()
	WHO="uid $(id -u)"
fi

# 26 directories of 200 files, 0 to 25 KiB, mtimes spread over a year.
mkdir "$R/src"
for d in $(seq 0 25); do
	mkdir "$R/src/d$d"
	size=$(( (d * 997) % 25600 ))
	if [ "$size" = 0 ]; then
		for i in $(seq 1 200); do : > "$R/src/d$d/f$i"; done
	else
		head -c $((200 * size)) /dev/urandom | (cd "$R/src/d$d" && split -a 3 -b "$size" - f)
	fi
	chmod $(( d % 2 ? 750 : 755 )) "$R/src/d$d"
	find "$R/src/d$d" -type f -name '*[ae0]' -exec chmod 640 {} +
	touch -d "@$((1500000000 + d * 1200000))" "$R/src/d$d"/f*
done
nfiles=$(find "$R/src" -type f | wc -l)
[ "$nfiles" -ge 5000 ] || { fail "made only $nfiles files"; finish; }
"$GNUTAR" -cf "$R/src.tar" -C "$R" src
chmod -R a+rX "$R/src" "$R/src.tar"

# as_user LIMIT DIR CMD...: CMD as the user, in DIR (theirs), at LIMIT;
# LIMIT "tight": 16, with descriptors 3 to 10 held open by the shell.
as_user() {
	local lim=$1 dir=$2; shift 2
	"${AS[@]}" bash -c 'if [ "$1" = tight ]; then ulimit -n 16 || exit 99
		for fd in 3 4 5 6 7 8 9 10; do eval "exec $fd</dev/null"; done
	else ulimit -n "$1" || exit 99; fi
	cd "$2" || exit 98; shift 2; exec "$@"' as_user "$lim" "$dir" "$@"
}

mkrun() {
	rm -rf "$R/run"; mkdir -p "$R/run/p" "$R/run/b"
	[ ${#AS[@]} = 0 ] || chown -R 65534:65534 "$R/run"
}

for lim in 1024 256 tight; do
	# extract
	mkrun
	as_user "$lim" "$R/run/p" "$GNUTAR" -xf "$R/src.tar" > "$R/p.out" 2>&1; prc=$?
	as_user "$lim" "$R/run/b" env BFO_TAR_STATS="$R/run/st" "$XFRONT" --use-bfo -xf "$R/src.tar" \
		> "$R/b.out" 2>&1; brc=$?
	if [ $prc != 0 ]; then
		fail "plain tar -x at ulimit -n $lim as $WHO: exit $prc: $(head -2 "$R/p.out")"
	elif [ $brc != 0 ] || [ -s "$R/b.out" ]; then
		fail "tar --use-bfo -x at ulimit -n $lim as $WHO: exit $brc, $(grep -c . "$R/b.out") messages: $(head -2 "$R/b.out")"
	elif ! diff <(tree_sig "$R/run/p") <(tree_sig "$R/run/b") > "$R/sig.diff"; then
		fail "tar --use-bfo -x at ulimit -n $lim: tree differs from plain tar's"; head -5 "$R/sig.diff"
	else
		xf=$(stat_of "$R/run/st" xfiles); q=$(stat_of "$R/run/st" xqueue_files)
		waits=$(stat_of "$R/run/st" xfd_waits)
		if [ "${xf:-0}" -lt "$nfiles" ]; then
			fail "ulimit -n $lim: the plugin wrote ${xf:-0} of $nfiles files"
		elif [ "$lim" != tight ] && [ "$q" -gt $((lim / 4)) ]; then
			fail "ulimit -n $lim: a queue of $q files (more than a quarter of the limit)"
		elif [ "$lim" = tight ] && [ "${waits:-0}" = 0 ]; then
			fail "ulimit -n $lim: no open of tar's was given descriptors back (xfd_waits=0, queue $q)"
		else
			pass "tar --use-bfo -x of $nfiles files at ulimit -n $lim as $WHO: same tree as plain tar, exit 0 ($xf files through the plugin, queue $q, $waits opens given descriptors back)"
		fi
	fi
	# create
	mkrun
	as_user "$lim" "$R/run" "$GNUTAR" -cf "$R/run/p.tar" -C "$R" src > "$R/p.out" 2>&1; prc=$?
	as_user "$lim" "$R/run" env BFO_TAR_STATS="$R/run/st" "$XFRONT" --use-bfo -cf "$R/run/b.tar" -C "$R" src \
		> "$R/b.out" 2>&1; brc=$?
	served=$(stat_of "$R/run/st" served)
	if [ $prc != 0 ] || [ $brc != 0 ] || [ -s "$R/b.out" ]; then
		fail "tar -c at ulimit -n $lim as $WHO: exit $prc plain, $brc with the plugin: $(head -2 "$R/b.out")"
	elif ! cmp -s "$R/run/p.tar" "$R/run/b.tar"; then
		fail "tar --use-bfo -c at ulimit -n $lim: archive differs from plain tar's"
	elif [ "$lim" != tight ] && [ "${served:-0}" -lt $((nfiles / 2)) ]; then
		fail "tar --use-bfo -c at ulimit -n $lim: only ${served:-0} of $nfiles files served by the plugin"
	else
		pass "tar --use-bfo -c of $nfiles files at ulimit -n $lim as $WHO: same archive as plain tar ($served served)"
	fi
done

# tar's limit is its own: a --to-command child sees the limit tar was given.
mkrun
as_user 256 "$R/run" "$XFRONT" --use-bfo -xf "$R/src.tar" --to-command='ulimit -Sn; cat > /dev/null' src/d1/faaa \
	> "$R/b.out" 2>&1
[ "$(cat "$R/b.out")" = 256 ] && pass "tar's child sees tar's limit (256)" ||
	fail "tar's child saw '$(head -1 "$R/b.out")' as its soft limit, not 256"
finish
