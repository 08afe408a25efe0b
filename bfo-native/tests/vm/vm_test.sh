#!/usr/bin/env bash
# A VM test (ctest label vm): runs part of the suite in scripts/vm-run on
# Debian 12's kernel (6.1), the platform the README names.
#
#   vm_test.sh native BUILD_DIR     the native CI subset (VM_NATIVE_TESTS)
#   vm_test.sh powercut BUILD_DIR   tests/powercut/pc.py at CI's size, a fresh
#                                   seed each run (printed) after the fixed one
#
# Exit: the command's status in the VM; 77 when no VM can be had here (the
# reason printed: vm-run --check); 1 when the VM did not run the command.
# Each run leaves BUILD_DIR/vm-tests/NAME.result (run or skipped, the
# seconds, the reason) for test.sh's summary.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
what=$1
build=$2
mkdir -p "$build/vm-tests"
result=$build/vm-tests/vm_$what.result
vmrun=$repo/scripts/vm-run

# The CI subset on 6.1 (about 6 minutes under TCG): the read engines
# (t_read_basic: auto, uring, portable; t_rawino: raw with the inode
# tables), the uring engine's release (t_uring_release), the writer
# (t_write), the copier (t_cp), cancels of sender and receiver (t_cancel),
# recovery (t_recover).  The receiver's data path on 6.1 is vm_powercut's
# (send|recv and the remote copy, whose uninterrupted runs are compared
# whole); t_sendrecv alone takes 12 minutes there.
VM_NATIVE_TESTS='^(t_read_basic|t_rawino|t_uring_release|t_write|t_cp|t_cancel|t_recover)$'

why=$("$vmrun" --check 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "$why"
  printf 'skipped 0 %s\n' "$why" >"$result"
  [ "$rc" -eq 77 ] && exit 77
  exit 1
fi
t0=$(date +%s)
case "$what" in
  native)
    "$vmrun" --timeout "${BFO_VM_TIMEOUT:-1500}" -- \
      ctest --test-dir "$build" -R "$VM_NATIVE_TESTS" --output-on-failure --timeout 1200
    st=$?
    ;;
  powercut)
    # java (BatchFileWriter) is the note's: its JVM takes a minute per run
    # under TCG, and CI builds bfo-java after these tests
    pc=(python3 "$repo/bfo-native/tests/powercut/pc.py" --build "$build"
        --workloads write,cp-first,cp-update,cp-delete,sendrecv,remote,tar)
    # CI's size: 20 flakey cuts per workload and file system, half with a
    # fixed seed (the same cuts every run), half with a fresh one (printed),
    # which also records one run per workload and fs for the log-writes
    # replay.  BFO_PC_ARGS adds to both (--long: the note's size).
    "$vmrun" --timeout "${BFO_VM_TIMEOUT:-2400}" -- bash -c '
      "$@" --seed 53 --method flakey --cuts 10 --files 30 ${BFO_PC_ARGS:-} || st=$?
      "$@" --cuts 10 --files 30 ${BFO_PC_ARGS:-} || st=$?
      exit ${st:-0}' pc "${pc[@]}"
    st=$?
    ;;
  *) echo "vm_test.sh: native|powercut" >&2; exit 2 ;;
esac
t1=$(date +%s)
[ "$st" -eq 125 ] && echo "vm_test.sh: the VM did not run the command (see above)"
printf 'run %d exit %d\n' "$((t1 - t0))" "$st" >"$result"
[ "$st" -eq 125 ] && exit 1
exit "$st"
