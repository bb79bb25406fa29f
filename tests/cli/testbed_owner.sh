#!/usr/bin/env bash
# `txpath testbed up|down` touch only what `up` made (issue 12): a name in use by something else
# is refused (exit 2, one line, nothing changed); `down` removes only what `up` recorded and says
# so; a second `up` says it replaces; a namespace holding a user's interface is kept; concurrent
# `up`s take turns; control bytes in names give one escaped error line.
# Needs root for everything past the validation checks: without root it prints SKIP and passes,
# unless CI is set (CI runs as root).
set -u
bin=${1:?usage: testbed_owner.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"
host_if="to${id}a"
peer_if="to${id}b"
netns="txpath-o$$"
addrs=(--host-addr "10.79.$x.1/24" --peer-addr "10.79.$x.2/24")
names=(--host-if "$host_if" --peer-if "$peer_if" --netns "$netns")
# Everything this run may have made (a build that does not validate makes the -x/.x ones).
root_cleanup() {
  ip link del dev "$host_if" 2>/dev/null
  ip link del dev "$peer_if" 2>/dev/null
  ip link del dev ".x$id" 2>/dev/null
  ip netns del "$netns" 2>/dev/null
  ip netns del "-x$id" 2>/dev/null
  rm -f "/run/txpath/testbed/$host_if" "/run/txpath/testbed/.x$id"
}
fail_with() { echo "FAIL: $*"; fail=1; }

# exactly one stderr line, exit $1; the line is left in $err.
expect_error() {
  local want=$1 rc lines
  shift
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [ "$rc" -ne "$want" ] || [ "$lines" -ne 1 ]; then
    fail_with "txpath ${*:0:3} -> exit $rc, $lines stderr line(s): ${err:0:300}"
  fi
  if printf '%s' "$err" | grep -q $'\e'; then fail_with "ESC reached the terminal: ${*:0:3}"; fi
}

# Item 7: a newline, an ESC, a non-UTF-8 byte or 100 KB in a name: one escaped line, exit 2.
big=$(head -c 100000 /dev/zero | tr '\0' n)  # one argument may be at most 128 KiB
for opt in --host-if --peer-if --netns --host-addr --peer-addr --qdisc; do
  for bad in $'a\nb' $'x\e[31my' $'v\xff' "$big"; do
    # The other names are this run's own: a build that did not validate touches nothing else.
    case $opt in
      --host-if) others=(--peer-if "$peer_if" --netns "$netns") ;;
      --peer-if) others=(--host-if "$host_if" --netns "$netns") ;;
      --netns) others=(--host-if "$host_if" --peer-if "$peer_if") ;;
      *) others=("${names[@]}") ;;
    esac
    expect_error 2 testbed up "${others[@]}" "$opt" "$bad"
    [ "${#err}" -lt 400 ] || fail_with "testbed up $opt: ${#err}-byte error line"
  done
done
expect_error 2 testbed down --host-if $'a\nb'
out=$("$bin" testbed show --host-if $'a\nb\e[31m')
[ "$out" = 'no testbed on a\x0ab\x1b[31m' ] || fail_with "show of a name with control bytes: $(printf '%s' "$out" | od -c | head -2)"
expect_error 2 testbed up --host-if "$host_if" --peer-if "$peer_if" --netns "-x$id"
expect_error 2 testbed up --host-if ".x$id" --peer-if "$peer_if" --netns "$netns"

needs_root "testbed_owner needs root for the rest (veth pairs, network namespaces)" \
  "testbed_owner: validation checks passed"

root_cleanup
# 1. An existing namespace holding a user's interface: refused, the interface survives.
ip netns add "$netns" || exit 1
ip -n "$netns" link add "$peer_if" type ifb 2>/dev/null ||
  ip -n "$netns" link add "$peer_if" type veth peer name "${peer_if}p" || exit 1
expect_error 2 testbed up "${names[@]}" "${addrs[@]}"
[ "$err" = "txpath: error: testbed: netns \"$netns\" exists and was not made by txpath testbed: choose another name with --netns" ] ||
  fail_with "foreign netns message: $err"
ip -n "$netns" link show dev "$peer_if" >/dev/null 2>&1 || fail_with "up removed the user's $peer_if in $netns"
[ -e "/sys/class/net/$host_if" ] && fail_with "up went on after refusing (made $host_if)"
# 3. ... and down, with no record, removes nothing and says so.
out=$("$bin" testbed down "${names[@]}")
rc=$?
[ "$rc" -eq 0 ] || fail_with "down without a record: exit $rc"
printf '%s\n' "$out" | head -1 | grep -qx "no testbed made by txpath on $host_if (nothing removed)" ||
  fail_with "down without a record said: $out"
ip -n "$netns" link show dev "$peer_if" >/dev/null 2>&1 || fail_with "down removed the user's netns or interface"
ip netns del "$netns"

# 2. A user's own veth pair with the chosen name: refused, not replaced; down leaves it.
ip link add "$host_if" type veth peer name "$peer_if" || exit 1
index=$(cat "/sys/class/net/$host_if/ifindex")
expect_error 2 testbed up "${names[@]}" "${addrs[@]}"
[ "$err" = "txpath: error: testbed: interface \"$host_if\" exists and was not made by txpath testbed: choose another name with --host-if" ] ||
  fail_with "foreign interface message: $err"
[ "$(cat "/sys/class/net/$host_if/ifindex" 2>/dev/null)" = "$index" ] || fail_with "up replaced the user's veth"
ip netns list | grep -qw "$netns" && fail_with "up went on after refusing (made netns $netns)"
out=$("$bin" testbed down "${names[@]}")
[ "$(cat "/sys/class/net/$host_if/ifindex" 2>/dev/null)" = "$index" ] || fail_with "down removed the user's veth"
printf '%s\n' "$out" | grep -qx "kept: interface $host_if exists but was not made by txpath testbed: left alone" ||
  fail_with "down did not say why $host_if stays: $out"
ip link del dev "$host_if"

# up, up again (says it replaces), concurrent ups (take turns), down removes everything.
"$bin" testbed up "${names[@]}" "${addrs[@]}" >"$tmp/up1" 2>&1 || { fail_with "up"; cat "$tmp/up1"; }
grep -q "^replaced" "$tmp/up1" && fail_with "first up says it replaced something"
[ "$(stat -c '%a %u' /run/txpath/testbed)" = "700 0" ] || fail_with "state dir is $(stat -c '%a %u' /run/txpath/testbed)"
[ "$(stat -c '%a %u' "/run/txpath/testbed/$host_if")" = "600 0" ] || fail_with "state file mode/owner"
"$bin" testbed up "${names[@]}" "${addrs[@]}" >"$tmp/up2" 2>&1 || { fail_with "second up"; cat "$tmp/up2"; }
head -1 "$tmp/up2" | grep -qx "replaced the testbed txpath made on $host_if / $peer_if (netns $netns)" ||
  { fail_with "second up did not say it replaces"; cat "$tmp/up2"; }
pids=()
for i in 1 2 3 4; do
  "$bin" testbed up "${names[@]}" "${addrs[@]}" >"$tmp/par$i" 2>&1 &
  pids+=($!)
done
for i in 1 2 3 4; do
  wait "${pids[$((i - 1))]}" || { fail_with "concurrent up $i failed"; cat "$tmp/par$i"; }
done
"$bin" testbed show --host-if "$host_if" >/dev/null || fail_with "no testbed after concurrent ups"

# Our namespace holding a user's interface: down removes our pair, keeps the namespace.
ip -n "$netns" link add "${peer_if}x" type ifb 2>/dev/null ||
  ip -n "$netns" link add "${peer_if}x" type veth peer name "${peer_if}y" || exit 1
expect_error 2 testbed up "${names[@]}" "${addrs[@]}"
printf '%s' "$err" | grep -q "holds \"${peer_if}x\"" || fail_with "up over our netns with a user's interface: $err"
"$bin" testbed show --host-if "$host_if" >/dev/null || fail_with "the refused up took the testbed down"
out=$("$bin" testbed down "${names[@]}")
rc=$?
[ "$rc" -eq 0 ] || fail_with "down exit $rc"
[ "$out" = "removed $host_if / $peer_if
kept: netns $netns stays: it holds \"${peer_if}x\", which txpath testbed did not make" ] &&
  true || [ "$out" = "removed $host_if / $peer_if
kept: netns $netns stays: it holds \"${peer_if}x\", \"${peer_if}y\", which txpath testbed did not make" ] ||
  fail_with "down with a user's interface in our netns said: $out"
ip -n "$netns" link show dev "${peer_if}x" >/dev/null 2>&1 || fail_with "down removed the user's interface"
[ -e "/sys/class/net/$host_if" ] && fail_with "down left $host_if"
ip netns del "$netns"

# A state directory or file another user could have written is refused (exit 2, one line),
# checked in a private mount namespace with a tmpfs over /run/txpath (nothing else sees it).
if command -v unshare >/dev/null; then
  bad_state=(
    "chmod 0777 /run/txpath|/run/txpath is writable by group or others (mode 0777)"
    "mkdir -m 0700 /run/txpath/testbed; chown 65534 /run/txpath/testbed|/run/txpath/testbed is owned by uid 65534, not root"
    "ln -s /tmp /run/txpath/testbed|/run/txpath/testbed is not a directory (or is a symlink)"
    "mkdir -m 0700 /run/txpath/testbed; echo x >/run/txpath/testbed/$host_if; chmod 0666 /run/txpath/testbed/$host_if|/run/txpath/testbed/$host_if is writable by group or others (mode 0666)"
  )
  for case_ in "${bad_state[@]}"; do
    setup=${case_%%|*}
    want="txpath: error: testbed: state ${case_#*|}: not trusting it (remove it, or fix it)"
    err=$(unshare --mount sh -c 'mkdir -p /run/txpath && mount -t tmpfs -o mode=0755 tmpfs /run/txpath && '"$setup"' && exec "$0" "$@"' \
          "$bin" testbed up "${names[@]}" "${addrs[@]}" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && [ "$err" = "$want" ] || fail_with "state '$setup': exit $rc, $err"
    [ -e "/sys/class/net/$host_if" ] && { fail_with "up went on with an untrusted state ($setup)"; root_cleanup; }
  done
else
  echo "note: unshare missing, state directory checks skipped"
fi

# down after up removes the pair, the namespace and the record.
"$bin" testbed up "${names[@]}" "${addrs[@]}" >/dev/null 2>&1 || fail_with "up (last)"
out=$("$bin" testbed down --host-if "$host_if")
[ "$out" = "removed $host_if / $peer_if (netns $netns)" ] || fail_with "down said: $out"
[ -e "/sys/class/net/$host_if" ] && fail_with "down left $host_if"
ip netns list | grep -qw "$netns" && fail_with "down left netns $netns"
[ -e "/run/txpath/testbed/$host_if" ] && fail_with "down left the state file"

[ "$fail" -eq 0 ] && echo "testbed_owner: all checks passed"
exit "$fail"
