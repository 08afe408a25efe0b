#!/usr/bin/env bash
# Demo: builds bfo (native part only, no tests), then runs the quick benchmark:
# makes a small-files data set and compares `bfo read` with plain reading; then
# WordCount on 4,000 small files with BatchTextInputFormat next to
# CombineTextInputFormat (Hadoop's local runner; a couple of minutes).
#   ./demo.sh [--keep] [BENCH-ARGS...]
# One line per stage; what the compiler, CMake and Maven print goes to a log,
# shown (its end) only when a build fails.  Everything the demo makes (data
# sets, images, helper programs, results, logs) is under one directory,
# /var/tmp/bfo-demo.XXXXXX, removed at the end unless --keep.  Other arguments
# go to benchmarks/bench.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

keep=0
args=()
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) args+=("$a") ;;
  esac
done

stage() { printf '== %s\n' "$*"; }
# show the end of a log after a failed step
failed() {
  tail -40 "$2" >&2
  echo "demo.sh: $1 failed (the end of $2 above)" >&2
  exit 1
}

work=$(mktemp -d /var/tmp/bfo-demo.XXXXXX)
chmod 755 "$work"   # the benchmark runs some methods as nobody
finish() {
  local st=$?
  if [ "$keep" = 1 ]; then
    echo "demo.sh: kept $work (data sets, images, results, logs)"
  else
    # the benchmark unmounts what it mounted; a mount left by a killed run is not removed through
    { findmnt -rn -o TARGET | grep -F "$work/" | sort -r | while read -r m; do umount -l "$m"; done; } || true
    rm -rf "$work"
    echo "demo.sh: removed $work, its data sets and results (./demo.sh --keep keeps them)"
  fi
  exit "$st"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage "checking the Debian packages (scripts/deps.sh)"
scripts/deps.sh > "$work/deps.log" 2>&1 || failed "scripts/deps.sh" "$work/deps.log"

# Same build directory and type as `mvn verify` (bfo-native/pom.xml).
build=bfo-native/build
stage "building bfo (CMake, $build)"
{ cmake -S bfo-native -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build "$build" --parallel "$(nproc 2>/dev/null || echo 2)"; } > "$work/build.log" 2>&1 ||
  failed "building bfo-native" "$work/build.log"

bench=benchmarks/bench
if [ ! -x "$bench" ]; then
  echo "demo.sh: $bench is missing or not executable" >&2
  exit 1
fi
status=0
# The benchmark's progress goes to its log; the table of its results is
# shown, or the end of its log when it failed.
stage "bfo read next to plain reading (benchmarks/bench --quick, about 3 minutes)"
"$bench" --quick --workdir "$work/bench" --results-dir "$work/results" --bfo "$build/bfo" \
  ${args[@]+"${args[@]}"} > "$work/bench.log" 2>&1 || status=$?
grep -E '^(### |\| )' "$work/bench.log" || true
if [ "$status" != 0 ]; then
  tail -20 "$work/bench.log" >&2
  echo "demo.sh: benchmarks/bench --quick failed (exit $status; the end of $work/bench.log above)" >&2
fi

# The main job on Hadoop's embedded local runner: WordCount on a generated small-files set with
# BatchTextInputFormat next to CombineTextInputFormat (and TextInputFormat on a subset), outputs
# checked identical (hadoop-input/bin/bfo-wordcount-demo; builds hadoop-input on first use).
stage "MapReduce WordCount on small files (hadoop-input, local runner)"
hadoop-input/bin/bfo-wordcount-demo --files 4000 --text-files 200 --dir "$work/wordcount" --brief ||
  status=$?
exit "$status"
