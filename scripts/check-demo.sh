#!/usr/bin/env bash
# check-demo: runs ./demo.sh as README's Quick start does and checks what a
# newcomer sees and what is left:
#  - it exits 0 and prints at most 40 lines, none with an escape code, none
#    of a compiler's, CMake's or Maven's ("[ 1%]", "-- ", "[INFO]", "warning");
#  - it leaves nothing: no /var/tmp/bfo-demo.*, no /var/tmp/bfo-wordcount-demo
#    that was not there, /var/tmp/bfo-bench as it was (its listing), no mount
#    and no loop device of its.
# Needs the Hadoop example built (test.sh runs this after `mvn verify`):
# exit 77 with the reason otherwise, as the demo would first download and
# build it with Maven.  Exit 0 passed, 1 failed (the demo's output shown).
set -uo pipefail
repo=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$repo"

if ! ls hadoop-input/target/bfo-hadoop-input-*[0-9T].jar > /dev/null 2>&1 ||
   [ ! -f hadoop-input/target/classpath.txt ]; then
  echo "check-demo: skipped: hadoop-input is not built (mvn -B -pl hadoop-input -am package -DskipTests, or test.sh)"
  exit 77
fi

W=$(mktemp -d /tmp/bfo-check-demo.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0 checked=0
pass() { echo "ok   $*"; checked=$((checked + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# What the demo may not leave: bfo's names in /var/tmp, bfo-bench's listing,
# mounts and loop devices.
snapshot() {
  {
    ls -1 /var/tmp | grep -E '^bfo-(demo|wordcount-demo|bench)' | sed 's|^|/var/tmp/|'
    [ -d /var/tmp/bfo-bench ] && find /var/tmp/bfo-bench -mindepth 1 -maxdepth 3 | sed 's|^|in bfo-bench: |'
    findmnt -rn -o TARGET | grep -E '/var/tmp/bfo-(demo|bench)' | sed 's|^|mount: |'
    losetup -ln -O BACK-FILE 2> /dev/null | grep -E '/var/tmp/bfo-(demo|bench)' | sed 's|^|loop: |'
  } | sort
}
snapshot > "$W/before"
st=0
./demo.sh > "$W/demo.out" 2>&1 || st=$?
snapshot > "$W/after"
lines=$(wc -l < "$W/demo.out")

show() { sed 's/^/     | /' "$W/demo.out" | cat -v | head -80; }
[ "$st" = 0 ] && pass "demo.sh exits 0" || fail "demo.sh exited $st"
[ "$lines" -gt 5 ] && [ "$lines" -le 40 ] && pass "demo.sh printed $lines lines (at most 40)" ||
  fail "demo.sh printed $lines lines (5 to 40 expected)"
! grep -q $'\e' "$W/demo.out" && pass "no escape code in its output" || fail "escape codes in its output"
noise=$(grep -E '^\[ *[0-9]+%\]|^-- |^\[(INFO|WARNING|ERROR)\]|[Ww]arning|^CMake ' "$W/demo.out" | head -3)
[ -z "$noise" ] && pass "no compiler, CMake or Maven output" || fail "build output shown: $noise"
grep -q 'outputs identical: bfo = combine' "$W/demo.out" && pass "WordCount's outputs checked identical" ||
  fail "no 'outputs identical: bfo = combine' line"
cmp -s "$W/before" "$W/after" && pass "nothing left in /var/tmp, no mount, no loop device" ||
  fail "left behind: $(diff "$W/before" "$W/after" | grep '^>' | head -5)"
[ "$fails" = 0 ] || { echo "check-demo: the demo's output:"; show; }

[ "$checked" -gt 0 ] || { echo "check-demo: nothing was checked"; exit 1; }
[ "$fails" = 0 ] && { echo "check-demo: all $checked checks passed"; exit 0; }
echo "check-demo: $fails failed"
exit 1
