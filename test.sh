#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/deps.sh), then
# `mvn -B verify` over the reactor (C build + ctest + ASan/UBSan ctest, then
# the Java modules), with the VM tests run beside it. Extra arguments go to Maven, e.g.
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
# The VM tests (ctest label vm) leave their results here.
vmres=bfo-native/build/vm-tests
rm -rf "$vmres"
st=0

# The VM tests (QEMU under TCG: CPU-bound for about 10 minutes) run beside
# the rest of the suite, whose tests mostly wait on disks, syncs and JVMs,
# rather than after it: the native build first, then the VM tests in the
# background, then Maven with ctest leaving the label vm out.  Not when
# the arguments skip the tests.
vm=1
for a in "$@"; do
  case "$a" in -DskipTests|-DskipTests=true|-Dmaven.test.skip=true) vm=0 ;; esac
done
vmpid=
if [ "$vm" = 1 ]; then
  mvn -B -q -pl bfo-native -Dbfo.native.jobs="$jobs" compile "$@"
  mkdir -p "$vmres"
  # vm_test.sh itself, not a second ctest on the build tree Maven's ctest
  # uses (both would write its Testing/ logs).  77: skipped, the reason in
  # its .result.
  setsid bash -c '
    vst=0
    for what in native powercut; do
      r=0
      bash bfo-native/tests/vm/vm_test.sh "$what" "$PWD/bfo-native/build" || r=$?
      echo "test.sh: vm_$what: exit $r"
      [ "$r" -eq 0 ] || [ "$r" -eq 77 ] || vst=1
    done
    exit $vst' >"$vmres/vm.log" 2>&1 &
  vmpid=$!
  # Its own session (setsid), so that an interrupted test.sh stops QEMU too.
  trap '[ -z "$vmpid" ] || kill -- -"$vmpid" 2>/dev/null' EXIT
fi

# -Dbfo.native.jobs first, so that an explicit one in "$@" wins.
mvn -B -Dbfo.native.jobs="$jobs" -Dbfo.native.ctestLabelExclude='^vm$' verify "$@" || st=$?

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

if [ -n "$vmpid" ]; then
  vst=0
  wait "$vmpid" || vst=$?
  vmpid=
  echo "test.sh: the VM tests (run beside the suite):"
  cat "$vmres/vm.log"
  [ "$vst" -eq 0 ] || { echo "test.sh: a VM test failed"; [ "$st" -ne 0 ] || st=$vst; }
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
