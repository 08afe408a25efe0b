#!/usr/bin/env bash
# check-demo: runs ./demo.sh as README's Quick start does and checks what a
# newcomer sees and what is left:
#  - it exits 0 and prints at most 40 lines, none with an escape code, none
#    of a compiler's, CMake's or Maven's ("[ 1%]", "-- ", "[INFO]", "warning");
#  - it leaves nothing: its /var/tmp/bfo-demo.XXXXXX removed, no
#    /var/tmp/bfo-wordcount-demo that was not there, nothing new of its in
#    /var/tmp/bfo-bench, no mount and no loop device of its.
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

# What the demo may not leave: its own directory, /var/tmp/bfo-wordcount-demo,
# entries in /var/tmp/bfo-bench (the benchmark's default work directory),
# mounts and loop devices.  The machine may be shared: another benchmark's
# run may add to /var/tmp/bfo-bench meanwhile, so an entry counts as the
# demo's when its name carries the PID of a process of the demo (the
# benchmark names its files and directories so) or no PID at all.
snapshot() {
  {
    [ -e /var/tmp/bfo-wordcount-demo ] && echo /var/tmp/bfo-wordcount-demo
    [ -d /var/tmp/bfo-bench ] && find /var/tmp/bfo-bench -mindepth 1 -maxdepth 3 | sed 's|^|in bfo-bench: |'
    findmnt -rn -o TARGET | grep -E '/var/tmp/bfo-(demo|bench)' | sed 's|^|mount: |'
    losetup -ln -O BACK-FILE 2> /dev/null | grep -E '/var/tmp/bfo-(demo|bench)' | sed 's|^|loop: |'
  } | sort
}
# The PIDs of the process tree under $1, every half second while it runs.
track_pids() {
  while kill -0 "$1" 2> /dev/null; do
    ps -e -o pid=,ppid= | awk -v root="$1" '
      { parent[$1] = $2 }
      END { for (p in parent) for (q = p; q in parent; q = parent[q]) if (q == root) { print p; break } }'
    sleep 0.5
  done
}
snapshot > "$W/before"
./demo.sh > "$W/demo.out" 2>&1 &
demo=$!
track_pids "$demo" > "$W/pids" &
tracker=$!
st=0
wait "$demo" || st=$?
wait "$tracker" 2> /dev/null
echo "$demo" >> "$W/pids"
snapshot > "$W/after"
lines=$(wc -l < "$W/demo.out")
# new entries: the demo's when named with one of its PIDs, or with none
comm -13 "$W/before" "$W/after" > "$W/new"
: > "$W/left"
while read -r e; do
  case "$e" in
    "in bfo-bench: "*)
      pids=$(basename "$e" | grep -oE -- '-[0-9]+' | tr -d - || true)
      if [ -z "$pids" ]; then echo "$e"; else
        for p in $pids; do grep -qx "$p" "$W/pids" && { echo "$e"; break; }; done
      fi ;;
    *) echo "$e" ;;
  esac
done < "$W/new" > "$W/left"
work=$(sed -n 's|^demo.sh: removed \(/var/tmp/bfo-demo\.[^,]*\),.*|\1|p' "$W/demo.out")

show() { sed 's/^/     | /' "$W/demo.out" | cat -v | head -80; }
[ "$st" = 0 ] && pass "demo.sh exits 0" || fail "demo.sh exited $st"
[ "$lines" -gt 5 ] && [ "$lines" -le 40 ] && pass "demo.sh printed $lines lines (at most 40)" ||
  fail "demo.sh printed $lines lines (5 to 40 expected)"
! grep -q $'\e' "$W/demo.out" && pass "no escape code in its output" || fail "escape codes in its output"
noise=$(grep -E '^\[ *[0-9]+%\]|^-- |^\[(INFO|WARNING|ERROR)\]|[Ww]arning|^CMake ' "$W/demo.out" | head -3)
[ -z "$noise" ] && pass "no compiler, CMake or Maven output" || fail "build output shown: $noise"
grep -q 'outputs identical: bfo = combine' "$W/demo.out" && pass "WordCount's outputs checked identical" ||
  fail "no 'outputs identical: bfo = combine' line"
[ -n "$work" ] && [ ! -e "$work" ] && pass "demo.sh removed its directory $work" ||
  fail "demo.sh did not say it removed its directory, or left it: '$work'"
[ ! -s "$W/left" ] && pass "nothing else left in /var/tmp, no mount, no loop device" ||
  fail "left behind: $(head -5 "$W/left")"
[ "$fails" = 0 ] || { echo "check-demo: the demo's output:"; show; }

[ "$checked" -gt 0 ] || { echo "check-demo: nothing was checked"; exit 1; }
[ "$fails" = 0 ] && { echo "check-demo: all $checked checks passed"; exit 0; }
echo "check-demo: $fails failed"
exit 1
