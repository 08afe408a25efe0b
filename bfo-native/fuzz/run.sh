#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/CMakeLists.txt) with clang in
# bfo-native/build-fuzz and runs each for a bounded time.
#
#   fuzz/run.sh [-t SECONDS] [--total SECONDS] [TARGET...]
#
#   -t SECONDS       each target's time (default 60)
#   --total SECONDS  the time of the whole run, shared by the targets
#   TARGET           a name from fuzz/CMakeLists.txt (default: all of them)
#
# Each target first replays its seed corpus (fuzz/corpus/TARGET, never
# written to: crash inputs committed there are regression cases), then
# fuzzes (with fuzz/TARGET.dict when there is one); new inputs go to
# build-fuzz/corpus/TARGET, kept between runs.
# Exit status: 0 no crash; 1 a target crashed, hung, leaked or ran out of
# memory (named on stderr, its input kept in build-fuzz/crashes/TARGET/);
# 2 usage, or the targets could not be built.
set -euo pipefail
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
native=$(dirname "$here")
build=$native/build-fuzz

each=60
total=
while [ $# -gt 0 ]; do
  case "$1" in
    -t) each=${2:?}; shift 2 ;;
    --total) total=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,18s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "usage: $0 [-t SECONDS] [--total SECONDS] [TARGET...]" >&2; exit 2 ;;
    *) break ;;
  esac
done
case "$each${total:+x$total}" in *[!0-9x]*|"") echo "run.sh: seconds must be whole numbers" >&2; exit 2 ;; esac

if ! command -v clang >/dev/null 2>&1; then
  echo "run.sh: clang not found (scripts/deps.sh installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi
mkdir -p "$build"
blog=$build/build.log
if ! CC=clang cmake -S "$native" -B "$build" -DBFO_FUZZ=ON -DBFO_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$blog" 2>&1 ||
   ! cmake --build "$build" --target bfo_fuzz --parallel "${BFO_FUZZ_JOBS:-2}" >>"$blog" 2>&1; then
  tail -n 40 "$blog" >&2
  echo "run.sh: building the fuzz targets failed (log: $blog)" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < "$build/fuzz-targets.txt"
fi
if [ -n "$total" ]; then
  each=$(( total / ${#targets[@]} ))
  [ "$each" -ge 1 ] || each=1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  bin=$build/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "run.sh: no target '$t' (targets: $(tr '\n' ' ' < "$build/fuzz-targets.txt"))" >&2
    exit 2
  fi
  mkdir -p "$build/corpus/$t" "$build/crashes/$t" "$build/logs"
  seeds=() dict=()
  [ -d "$here/corpus/$t" ] && seeds=("$here/corpus/$t")
  [ -f "$here/$t.dict" ] && dict=("-dict=$here/$t.dict")
  log=$build/logs/$t.log
  stamp=$build/logs/$t.start
  : > "$stamp"
  echo "run.sh: fuzz_$t for $each s (log: $log)"
  # A single input running 25 s is a hang; -rss_limit_mb stays libFuzzer's 2 GiB.
  if "$bin" "${dict[@]}" -max_total_time="$each" -timeout=25 -print_final_stats=1 \
       -artifact_prefix="$build/crashes/$t/" "$build/corpus/$t" "${seeds[@]}" >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$log" | sed "s/^/  $t: /" || true
  else
    echo "run.sh: fuzz_$t CRASHED (exit $?); its report:" >&2
    grep -vE '^#[0-9]+' "$log" | tail -n 60 >&2
    echo "run.sh: crash input(s) kept:" >&2
    find "$build/crashes/$t" -type f -newer "$stamp" | sed 's/^/  /' >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run.sh: crashed: ${failed[*]}" >&2
  exit 1
fi
echo "run.sh: no crash in ${targets[*]}"
