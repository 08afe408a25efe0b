#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/deps.sh), then
# `mvn -B verify` over the reactor (C build + ctest + ASan/UBSan ctest, then
# the Java modules). Extra arguments go to Maven, e.g.
#   ./test.sh -Dbfo.sanitize.skip=true
# Exit status is Maven's.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

scripts/deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
# -Dbfo.native.jobs first, so that an explicit one in "$@" wins.
exec mvn -B -Dbfo.native.jobs="$jobs" verify "$@"
