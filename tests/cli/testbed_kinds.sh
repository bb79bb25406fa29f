#!/usr/bin/env bash
# `txpath testbed up --queues N` and `--kind ifb` (issue 14): option errors (exit 2, one line);
# a veth pair with N queues and mq at the host end; the ifb null NIC: up/show/down output, mq with
# per-queue children, a user's interface refused and left alone, and delivery: frames sent on it
# through AF_PACKET (with and without PACKET_QDISC_BYPASS) and datagrams sent to its target by a
# UDP socket raise its rx_dropped counter by exactly their number.
# Needs root for everything past the validation checks: without root it prints SKIP and passes,
# unless CI is set (CI runs as root).
set -u
bin=${1:?usage: testbed_kinds.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"
ifb="tk${id}i"
host_if="tk${id}a"
peer_if="tk${id}b"
netns="txpath-k$$"
ifb_names=(--kind ifb --host-if "$ifb")
ifb_addrs=(--host-addr "10.87.$x.1/24" --peer-addr "10.87.$x.2/24")
veth_names=(--host-if "$host_if" --peer-if "$peer_if" --netns "$netns")
root_cleanup() {
  ip link del dev "$ifb" 2>/dev/null
  ip link del dev "$host_if" 2>/dev/null
  ip netns del "$netns" 2>/dev/null
  rm -f "/run/txpath/testbed/$ifb" "/run/txpath/testbed/$host_if"
}
fail_with() { echo "FAIL: $*"; fail=1; }


# Validation: no root needed.
bad testbed up "${veth_names[@]}" --queues 0 >/dev/null
bad testbed up "${veth_names[@]}" --queues 257 >/dev/null
bad testbed up "${veth_names[@]}" --queues x >/dev/null
bad testbed up --kind nosuch --host-if "$ifb" >/dev/null
bad testbed show --kind nosuch >/dev/null
err=$(bad testbed up "${ifb_names[@]}" --peer-if "$peer_if")
[ "$err" = "txpath: error: --peer-if is for --kind veth: an ifb testbed has no peer interface or netns" ] ||
  fail_with "ifb with --peer-if said: $err"
bad testbed up "${ifb_names[@]}" --netns "$netns" >/dev/null
bad testbed down "${ifb_names[@]}" --netns "$netns" >/dev/null
err=$(bad testbed up "${ifb_names[@]}" --host-addr "10.87.$x.1/24" --peer-addr "10.86.$x.2/24")
printf '%s' "$err" | grep -q "target address 10.86.$x.2 is not a host address in the subnet" ||
  fail_with "ifb target outside the subnet said: $err"
"$bin" testbed up --help | grep -q -- "--queues" || fail_with "testbed up --help lacks --queues"
"$bin" testbed up --help | grep -q -- "--kind" || fail_with "testbed up --help lacks --kind"

needs_root "testbed_kinds needs root for the rest (veth pairs, ifb devices, network namespaces)" \
  "testbed_kinds: validation checks passed"

root_cleanup
# veth with 3 queues: both ends have them, mq at the host end, show says so.
"$bin" testbed up "${veth_names[@]}" --host-addr "10.86.$x.1/24" --peer-addr "10.86.$x.2/24" \
  --queues 3 >"$tmp/vup" 2>&1 || { fail_with "veth up --queues 3"; cat "$tmp/vup"; }
grep -qx "qdisc: mq (root of $host_if), pfifo_fast on each of its 3 queues" "$tmp/vup" ||
  { fail_with "veth qdisc line"; cat "$tmp/vup"; }
grep -qx "queues: 3" "$tmp/vup" || { fail_with "veth queues line"; cat "$tmp/vup"; }
[ "$(ls "/sys/class/net/$host_if/queues" | grep -c '^tx-')" = 3 ] || fail_with "host end has not 3 tx queues"
ip -n "$netns" -d link show dev "$peer_if" | grep -q "numtxqueues 3 numrxqueues 3" || fail_with "peer end queues"
[ "$(tc qdisc show dev "$host_if" | grep -c 'parent 1:[123] bands 3')" = 3 ] ||
  { fail_with "mq children"; tc qdisc show dev "$host_if"; }
"$bin" testbed down "${veth_names[@]}" >/dev/null || fail_with "veth down"

# ifb: a user's interface with the chosen name is refused and left alone.
ip link add "$ifb" type ifb || exit 1
err=$(bad testbed up "${ifb_names[@]}" "${ifb_addrs[@]}")
[ "$err" = "txpath: error: testbed: interface \"$ifb\" exists and was not made by txpath testbed: choose another name with --host-if" ] ||
  fail_with "user's ifb message: $err"
out=$("$bin" testbed down "${ifb_names[@]}")
[ "$out" = "no testbed made by txpath on $ifb (nothing removed)
kept: interface $ifb exists but was not made by txpath testbed: left alone" ] || fail_with "down of a user's ifb said: $out"
[ -e "/sys/class/net/$ifb" ] || fail_with "the user's ifb is gone"
ip link del dev "$ifb"

# ifb with 4 queues: up, show, qdiscs.
"$bin" testbed up "${ifb_names[@]}" "${ifb_addrs[@]}" --queues 4 >"$tmp/up" 2>&1 ||
  { fail_with "ifb up"; cat "$tmp/up"; }
mac=$(cat "/sys/class/net/$ifb/address" 2>/dev/null)
[ "$(cat "$tmp/up")" = "host: $ifb 10.87.$x.1/24 $mac (ifb: a null NIC, netns of the caller)
target: 10.87.$x.2/24 $mac (static neighbour; nothing receives: $ifb counts each frame in rx_packets)
qdisc: mq (root of $ifb), pfifo_fast on each of its 4 queues
mtu: 1500
queues: 4" ] || { fail_with "ifb up output"; cat "$tmp/up"; }
"$bin" testbed show --host-if "$ifb" >"$tmp/show"
rc=$?
[ "$rc" -eq 0 ] && cmp -s "$tmp/up" "$tmp/show" || { fail_with "show (exit $rc) differs from up"; diff "$tmp/up" "$tmp/show"; }
tc qdisc show dev "$ifb" | grep -q "^qdisc mq 1: root" || fail_with "no mq at the root of $ifb"
[ "$(ls "/sys/class/net/$ifb/queues" | grep -c '^tx-')" = 4 ] || fail_with "$ifb has not 4 tx queues"
[ "$(cat "/sys/class/net/$ifb/statistics/rx_dropped")" = 0 ] || fail_with "$ifb counted frames before any was sent"

# Delivery: K frames through AF_PACKET (bypass on and off) and K UDP datagrams to the target.
if command -v python3 >/dev/null; then
  lib_python3 - "$ifb" "$mac" "10.87.$x.1" "10.87.$x.2" >"$tmp/delivery" 2>&1 <<'EOF2' || { fail_with "delivery"; cat "$tmp/delivery"; }
import socket, sys
from txframes import FrameSender
ifname, mac, sip, dip = sys.argv[1:5]
def dropped():
    with open('/sys/class/net/%s/statistics/rx_dropped' % ifname) as f:
        return int(f.read())
K = 500
for bypass in (0, 1):
    s = FrameSender(ifname, mac, mac, sip, dip)
    if bypass:
        s._sock.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS
    before = dropped()
    for seq in range(K):
        s.send(0, seq)
    got = dropped() - before
    assert got == K, 'AF_PACKET bypass=%d: rx_dropped rose by %d, not %d' % (bypass, got, K)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
u.connect((dip, 9000))
before = dropped()
for _ in range(K):
    u.send(bytes(32))
got = dropped() - before
assert got == K, 'UDP: rx_dropped rose by %d, not %d' % (got, K)
EOF2
else
  echo "note: python3 missing, delivery part skipped"
fi

# down removes the ifb and its record, and says so.
out=$("$bin" testbed down --host-if "$ifb")
[ "$out" = "removed $ifb (ifb)" ] || fail_with "ifb down said: $out"
[ -e "/sys/class/net/$ifb" ] && fail_with "down left $ifb"
[ -e "/run/txpath/testbed/$ifb" ] && fail_with "down left the record"
out=$("$bin" testbed show "${ifb_names[@]}")
rc=$?
[ "$rc" -eq 1 ] && [ "$out" = "no testbed on $ifb" ] || fail_with "show after down: exit $rc, $out"

[ "$fail" -eq 0 ] && echo "testbed_kinds: all checks passed"
exit "$fail"
