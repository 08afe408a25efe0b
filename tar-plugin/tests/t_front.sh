#!/bin/bash
# t_front: the tar front.  Without --use-bfo (or BFO_TAR=1) GNU tar runs
# untouched (no plugin in its environment); --use-bfo anywhere before `--`
# is removed and preloads the plugin; after `--` it is a file name; make
# install puts the front ahead of /usr/bin/tar and make uninstall removes it.
# A malformed BFO_TAR_* setting is named on stderr and its default kept.
. "$(dirname "$0")/lib.sh"
cd "$W"
mkdir t; echo hello > t/a
# What GNU tar sees: its environment, through --to-command on extraction.
"$GNUTAR" -cf a.tar t
env_of() { "$FRONT" "$@" -xf a.tar --to-command='printf "%s\n" "$LD_PRELOAD"' ; }
[ -z "$(env_of)" ] && pass "no --use-bfo: no plugin" || fail "plugin loaded without --use-bfo"
# The plugin strips itself from children (compressors, --to-command).
LD_PRELOAD= "$FRONT" --use-bfo -xf a.tar --to-command='printf "%s\n" "$LD_PRELOAD"' > child.env
[ -z "$(tr -d "\n" < child.env)" ] && pass "children run without the plugin" || fail "child saw LD_PRELOAD=$(cat child.env)"
cat > probe.sh <<'P'
#!/bin/bash
printf '%s\n' "$LD_PRELOAD" > "$PROBE_OUT"; printf '%s\n' "$@" >> "$PROBE_OUT"
P
chmod +x probe.sh
PROBE_OUT=$W/p1 BFO_TAR_REAL=$W/probe.sh "$FRONT" -cf x.tar --use-bfo t
grep -q libbfo_tar.so p1 && ! grep -q -- --use-bfo p1 && pass "--use-bfo in the middle: plugin, option removed" || fail "--use-bfo handling: $(cat p1)"
PROBE_OUT=$W/p2 BFO_TAR=1 BFO_TAR_REAL=$W/probe.sh "$FRONT" -cf x.tar t
grep -q libbfo_tar.so p2 && pass "BFO_TAR=1: plugin" || fail "BFO_TAR=1 ignored"
PROBE_OUT=$W/p3 BFO_TAR_REAL=$W/probe.sh "$FRONT" -cf x.tar -- --use-bfo
! grep -q libbfo_tar.so p3 && grep -qx -- --use-bfo p3 && pass "after --, --use-bfo is a name" || fail "after --: $(cat p3)"
"$FRONT" --version | head -1 | grep -q 'GNU tar' && pass "front runs GNU tar" || fail "front --version"
"$FRONT" -cf t.tar t && cmp -s t.tar a.tar && pass "front without --use-bfo: same archive" || fail "front archive"
# A malformed BFO_TAR_* setting is named once on stderr and its default kept:
# the archive is tar's, the exit status 0, nothing else is said.
for bad in BFO_TAR_ARENA_MB=lots BFO_TAR_ARENA_MB=8 BFO_TAR_EXTRACT=maybe BFO_TAR_ENGINE=fast BFO_TAR_DURABILITY=some; do
	env "$bad" "$FRONT" --use-bfo -cf s.tar t 2> s.err; rc=$?
	if [ $rc = 0 ] && cmp -s s.tar a.tar && [ "$(wc -l < s.err)" = 1 ] && grep -q "^bfo-tar: ignoring $bad (" s.err; then
		pass "$bad: named once on stderr ($(cut -d'(' -f2 s.err | tr -d ')')), same archive"
	else
		fail "$bad: exit $rc, stderr: $(cat s.err)"
	fi
done
BFO_TAR_ARENA_MB=16 BFO_TAR_ENGINE=portable BFO_TAR_DURABILITY=batch BFO_TAR_EXTRACT=on \
	"$FRONT" --use-bfo -cf s.tar t 2> s.err && cmp -s s.tar a.tar && [ ! -s s.err ] &&
	pass "valid settings: nothing said" || fail "valid settings: $(cat s.err)"
# Install and uninstall into a scratch prefix.
if [ -n "${BUILD_DIR:-}" ] && [ -f "$BUILD_DIR/Makefile" ]; then
	cmake --install "$BUILD_DIR" --prefix "$W/prefix" > /dev/null &&
	[ -x "$W/prefix/bin/tar" ] && [ -f "$W/prefix/lib/bfo-tar/libbfo_tar.so" ] &&
	pass "install" || fail "install"
	(unset BFO_TAR_PLUGIN; PATH=$W/prefix/bin:$PATH tar --use-bfo -cf i.tar t) && cmp -s i.tar a.tar &&
	pass "installed front with --use-bfo on PATH" || fail "installed front"
	# uninstall reads the manifest install wrote into the build tree
	cmake -DMANIFEST="$BUILD_DIR/install_manifest.txt" -P "$TESTS/../cmake/uninstall.cmake" > /dev/null
	[ ! -e "$W/prefix/bin/tar" ] && [ ! -e "$W/prefix/lib/bfo-tar" ] && pass "uninstall" || fail "uninstall left files"
else
	echo "note: BUILD_DIR not set, install not tested"
fi
finish
