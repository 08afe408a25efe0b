#!/usr/bin/env bash
# Demo: builds bfo (native part only, no tests), then runs the quick benchmark:
# makes a small-files data set and compares `bfo read` with plain reading; then
# WordCount on 4,000 small files with BatchTextInputFormat next to
# CombineTextInputFormat (Hadoop's local runner; a couple of minutes).
# Extra arguments go to benchmarks/bench.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

scripts/deps.sh

# Same build directory and type as `mvn verify` (bfo-native/pom.xml).
build=bfo-native/build
mkdir -p "$build"
log="$build/demo-build.log"
if ! { cmake -S bfo-native -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" --parallel "$(nproc 2>/dev/null || echo 2)"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "demo.sh: building bfo-native failed (log: $log)" >&2
  exit 1
fi

bench=benchmarks/bench
if [ ! -e "$bench" ]; then
  echo "demo.sh: $bench is missing: the benchmark harness is not in this tree yet" >&2
  exit 1
fi
if [ ! -x "$bench" ]; then
  echo "demo.sh: $bench is not executable (chmod +x $bench)" >&2
  exit 1
fi
status=0
"$bench" --quick "$@" || status=$?

# The main job on Hadoop's embedded local runner: WordCount on a generated small-files set with
# BatchTextInputFormat next to CombineTextInputFormat (and TextInputFormat on a subset), outputs
# checked identical (hadoop-input/bin/bfo-wordcount-demo; builds hadoop-input on first use).
echo
echo "== MapReduce WordCount on small files (hadoop-input, local runner)"
hadoop-input/bin/bfo-wordcount-demo --files 4000 --text-files 200 || status=$?
exit "$status"
