#!/usr/bin/env bash
# Installs the Debian packages that the BFO build and tests need, when missing.
#
#   scripts/deps.sh          install what is missing (as root), or, when not
#                            root, print the `sudo apt-get install ...` line
#                            needed and exit 2. Prints nothing and touches no
#                            network when everything is installed.
#   scripts/deps.sh --list   print the package list, one per line.
#
# Used by test.sh, demo.sh and docker/Dockerfile (the single source of the list).
set -euo pipefail

PACKAGES=(
  cmake
  gcc
  clang
  libclang-rt-14-dev
  make
  pkg-config
  liburing-dev
  libarchive-dev
  libxxhash-dev
  libzstd-dev
  libext2fs-dev
  xxhash
  maven
  openjdk-17-jdk-headless
  e2fsprogs
  xfsprogs
  util-linux
  tar
  rsync
  openssh-client
  openssh-server
  iproute2
  python3
  python3-matplotlib
  strace
  attr
  gzip
  bzip2
  xz-utils
  dpkg-dev
  groff-base
  qemu-system-x86
  busybox-static
  cpio
  kmod
  dmsetup
)

case "${1:-}" in
  --list)
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
    ;;
  -h|--help)
    sed -n '2,11s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  "")
    ;;
  *)
    echo "usage: $0 [--list]" >&2
    exit 64
    ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps.sh: not a Debian system (no dpkg-query); install the equivalents of: ${PACKAGES[*]}" >&2
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$status" in
    *" ok installed") ;;
    *) missing+=("$p") ;;
  esac
done

[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages; install them with:" >&2
  echo "sudo apt-get install -y --no-install-recommends ${missing[*]}"
  exit 2
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
