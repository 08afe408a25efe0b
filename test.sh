#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/deps.sh), then
# `mvn -B verify` over the reactor (C build + ctest + ASan/UBSan ctest, then
# the Java modules). Extra arguments go to Maven, e.g.
#   ./test.sh -Dbfo.sanitize.skip=true
# Then, when the build passed, the README's promises: scripts/check-demo.sh
# (./demo.sh quiet, at most 40 lines, nothing left behind) and
# scripts/check-readme.sh (the install recipes as written, as a new
# ordinary user); a skip (77) is reported, not a failure.  Exit status is
# Maven's, or 1 when one of those failed.  Then a summary of the VM tests
# (ctest label vm, in scripts/vm-run on Debian 12's kernel): how many ran,
# how many skipped.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

scripts/deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
# The VM tests (ctest label vm, run by mvn's ctest) leave their results here.
vmres=bfo-native/build/vm-tests
rm -rf "$vmres"
# -Dbfo.native.jobs first, so that an explicit one in "$@" wins.
st=0
mvn -B -Dbfo.native.jobs="$jobs" verify "$@" || st=$?

if [ "$st" = 0 ]; then
  for check in scripts/check-demo.sh scripts/check-readme.sh; do
    cst=0
    "$check" || cst=$?
    case "$cst" in
      0) echo "test.sh: $check passed" ;;
      77) echo "test.sh: $check skipped (the reason above)" ;;
      *) echo "test.sh: $check FAILED"; st=1 ;;
    esac
  done
fi

# Summary of the VM tests: run (with their time and status) and skipped (why).
run=0 skipped=0
for f in "$vmres"/*.result; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .result)
  read -r kind secs rest <"$f"
  if [ "$kind" = run ]; then
    run=$((run + 1))
    echo "test.sh: VM test $name: ran in ${secs} s, $rest"
  else
    skipped=$((skipped + 1))
    echo "test.sh: VM test $name: skipped: $rest"
  fi
done
echo "test.sh: VM tests: $run run, $skipped skipped"
exit "$st"
