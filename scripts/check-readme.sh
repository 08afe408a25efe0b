#!/usr/bin/env bash
# check-readme: runs README.md's install recipes as written, each in a fresh
# shell, and fails when any step of them fails.  The recipes are the fenced
# blocks after a `<!-- check-readme: NAME -->` line:
#  - home: as a new ordinary user (made here, removed at the end), in a copy
#    of this tree in its home; then ~/.local must be gone again (the user
#    had none) after the recipe's uninstall;
#  - system: as root ("sudo CMD" runs CMD: root needs no sudo), with
#    /usr/local an overlay in a mount namespace of this script's, so the
#    machine's own /usr/local is never touched; after the recipe's
#    uninstall /usr/local must list as it did before;
#  - deb, deb-remove: in a namespace whose /usr, /etc and /var are
#    overlays: the package built, installed with apt, bfo run from
#    /usr/bin, the package removed (apt asks: answered yes): /usr/bin/bfo gone.
# prog.c (the README's) goes next to each copy of the tree.  Exit 0 all
# passed, 1 a step failed (its output shown), 77 skipped with the reason.
#   scripts/check-readme.sh [--keep]     (--keep: leave the work directory)
set -uo pipefail
repo=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
keep=0
[ "${1:-}" = --keep ] && keep=1

skip() { echo "check-readme: skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (a user of its own, mount namespaces)"
for c in useradd userdel runuser unshare git cmake cc pkg-config; do
  command -v "$c" > /dev/null || skip "$c is not installed"
done
unshare --mount true 2> /dev/null || skip "cannot make a mount namespace here"

W=$(mktemp -d /tmp/bfo-check-readme.XXXXXX)
chmod 755 "$W"
user=bforeadme$$
fails=0 checked=0
cleanup() {
  userdel "$user" > /dev/null 2>&1
  [ "$keep" = 1 ] && echo "check-readme: kept $W" || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "ok   $*"; checked=$((checked + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# The fenced block after `<!-- check-readme: $1 -->` in README.md.
block() {
  awk -v want="<!-- check-readme: $1 -->" '
    $0 == want { found = 1; next }
    found == 1 && /^```/ { found = 2; next }
    found == 2 && /^```/ { exit }
    found == 2 { print }' "$repo/README.md"
}
for b in home system deb deb-remove prog.c; do
  [ -n "$(block "$b")" ] || { fail "README.md has no check-readme block '$b'"; exit 1; }
done

# This tree as a clone has it (tracked and new files, nothing ignored: no build).
copy_tree() {
  mkdir -p "$1"
  (cd "$repo" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$1"
  block prog.c > "$1/prog.c"
}

# run NAME LOG CMD...: a recipe step; its log shown when it fails.
run() {
  local name=$1 log=$2
  shift 2
  if "$@" > "$log" 2>&1; then
    pass "$name"
  else
    fail "$name (exit $?); the end of its log, $log:"
    tail -25 "$log" | sed 's/^/     /'
  fi
}

# ---------------------------------------------------------------- home
home=$W/home
useradd --home-dir "$home" --create-home --shell /bin/bash --user-group "$user" ||
  skip "useradd $user failed"
copy_tree "$home/bfo"
{ echo "set -ex"; echo "cd ~/bfo"; block home; } > "$home/recipe.sh"
chown -R "$user:" "$home"
# runuser -l: a login shell with the user's own environment, as a newcomer's.
run "home: README's ~/.local recipe as the ordinary user $user" "$W/home.log" \
  runuser -l "$user" -c "bash $home/recipe.sh"
grep -qx '2 files' "$W/home.log" && pass "home: ./prog bfo-native/man reads its 2 files" ||
  fail "home: ./prog printed no '2 files'"
[ ! -e "$home/.local" ] && pass "home: the uninstall left no ~/.local (the user had none)" ||
  fail "home: left behind: $(find "$home/.local" | head -5)"

# ---------------------------------------------------------------- system
sys=$W/system
copy_tree "$sys/bfo"
mkdir -p "$sys/up" "$sys/work"
{ echo "set -ex"; echo 'sudo() { "$@"; }'; echo "cd $sys/bfo"; block system; } > "$sys/recipe.sh"
cat > "$sys/ns.sh" << EOF
set -e
mount -t overlay overlay -o lowerdir=/usr/local,upperdir=$sys/up,workdir=$sys/work /usr/local
find /usr/local | sort > $sys/before.list
env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash $sys/recipe.sh
find /usr/local | sort > $sys/after.list
EOF
run "system: README's /usr/local recipe (root, /usr/local an overlay)" "$W/system.log" \
  unshare --mount --propagation private bash "$sys/ns.sh"
grep -qx '2 files' "$W/system.log" && pass "system: ./prog bfo-native/man reads its 2 files" ||
  fail "system: ./prog printed no '2 files'"
if [ -s "$sys/after.list" ]; then
  cmp -s "$sys/before.list" "$sys/after.list" && pass "system: /usr/local as before after the uninstall" ||
    fail "system: /usr/local differs: $(diff "$sys/before.list" "$sys/after.list" | head -5)"
fi

# ---------------------------------------------------------------- deb
if command -v apt-get > /dev/null && command -v dpkg > /dev/null && [ -d "$sys/bfo/bfo-native/build" ]; then
  if [ "$(dpkg-query -W -f '${db:Status-Status}' bfo 2> /dev/null)" = installed ]; then
    echo "note: the .deb's recipe not run: a bfo package is installed on this machine"
  else
    deb=$W/deb
    mkdir -p "$deb"
    { echo "set -ex"; echo 'sudo() { "$@"; }'; echo "cd $sys/bfo"; block deb;
      echo 'test "$(command -v bfo)" = /usr/bin/bfo'; block deb-remove;
      echo '! test -e /usr/bin/bfo'; echo 'test "$(dpkg-query -W -f '"'"'${db:Status-Status}'"'"' bfo 2> /dev/null)" != installed'; } > "$deb/recipe.sh"
    { echo "set -e"
      for d in usr etc var; do
        mkdir -p "$deb/$d.up" "$deb/$d.work"
        echo "mount -t overlay overlay -o lowerdir=/$d,upperdir=$deb/$d.up,workdir=$deb/$d.work /$d"
      done
      # apt asks before it removes: answered yes, as the newcomer at the terminal would
      echo "yes | env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash $deb/recipe.sh"
    } > "$deb/ns.sh"
    run "deb: README's .deb recipe: built, installed with apt, bfo in /usr/bin, removed (/usr, /etc, /var overlays)" \
      "$W/deb.log" unshare --mount --propagation private bash "$deb/ns.sh"
  fi
fi

[ "$checked" -gt 0 ] || { echo "check-readme: nothing was checked"; exit 1; }
[ "$fails" = 0 ] && { echo "check-readme: all $checked checks passed"; exit 0; }
echo "check-readme: $fails failed"
exit 1
