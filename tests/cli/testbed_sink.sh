#!/usr/bin/env bash
# `txpath testbed` and `txpath sink` contract: bad input -> exactly one error line on stderr and
# exit 2; testbed up/show/down output and exit codes; a sink run on the testbed's peer end counts
# the frames sent from the host end (JSON on stdout with --json -).
# Needs root for everything past the validation checks: without root it prints SKIP and passes,
# unless CI is set (CI runs as root).
set -u
bin=${1:?usage: testbed_sink.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"
host_if="tc${id}a"
peer_if="tc${id}b"
netns="txpath-c$$"
host_ip="10.78.$x.1"
peer_ip="10.78.$x.2"
names=(--host-if "$host_if" --peer-if "$peer_if" --netns "$netns")
root_cleanup() {
  ip link del dev "$host_if" 2>/dev/null
  ip netns del "$netns" 2>/dev/null
  rm -f "/run/txpath/testbed/$host_if"
}


# Validation: no root needed.
bad testbed
bad testbed nosuch
bad testbed up --host-if "bad name"
bad testbed up --host-if this-name-is-too-long
bad testbed up --netns ../x
bad testbed up --host-addr 10.0.0.300/24
bad testbed up --peer-addr 10.0.0.2
bad testbed up --mtu 10
bad testbed up --mtu x
bad testbed down --host-if "a/b"
bad sink
bad sink lo --duration -1
bad sink lo --absorb-port 70000
bad sink lo --json /nonexistent-dir/out.json

needs_root "testbed_sink needs root for the rest (veth pairs, network namespaces)" \
  "testbed_sink: validation checks passed"

bad sink nosuchif0
bad sink lo --netns "txpath-nosuch$$"
bad testbed up "${names[@]}" --host-addr "$host_ip/24" --peer-addr "$peer_ip/24" --qdisc nosuchqdisc
[ -e "/sys/class/net/$host_if" ] && { echo "FAIL: a failed up left $host_if behind"; fail=1; }

# up: prints the names, addresses, MACs and qdisc, one line each.
if ! "$bin" testbed up "${names[@]}" --host-addr "$host_ip/24" --peer-addr "$peer_ip/24" \
     --qdisc "pfifo limit 5000" >"$tmp/up" 2>"$tmp/up.err"; then
  echo "FAIL: testbed up exited non-zero"; cat "$tmp/up" "$tmp/up.err"; fail=1
fi
host_mac=$(cat "/sys/class/net/$host_if/address" 2>/dev/null)
peer_mac=$(ip -n "$netns" -o link show dev "$peer_if" 2>/dev/null | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
grep -q "^host: $host_if $host_ip/24 $host_mac " "$tmp/up" || { echo "FAIL: up host line"; cat "$tmp/up"; fail=1; }
grep -q "^peer: $peer_if $peer_ip/24 $peer_mac (netns $netns)" "$tmp/up" || { echo "FAIL: up peer line"; cat "$tmp/up"; fail=1; }
grep -q "^qdisc: pfifo limit 5000" "$tmp/up" || { echo "FAIL: up qdisc line"; cat "$tmp/up"; fail=1; }
tc qdisc show dev "$host_if" root | grep -q "limit 5000" || { echo "FAIL: qdisc not set"; fail=1; }

# show: the same, exit 0.
"$bin" testbed show --host-if "$host_if" >"$tmp/show"
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: show exit $rc"; fail=1; }
cmp -s "$tmp/up" "$tmp/show" || { echo "FAIL: show differs from up"; diff "$tmp/up" "$tmp/show"; fail=1; }

# sink: count frames sent from the host end meanwhile (python3's AF_PACKET socket).
if command -v python3 >/dev/null; then
  "$bin" sink "$peer_if" --netns "$netns" --duration 4 --json - >"$tmp/sink.json" 2>"$tmp/sink.err" &
  sink_pid=$!
  for _ in $(seq 100); do grep -q "counting on" "$tmp/sink.err" && break; sleep 0.05; done
  lib_python3 - "$host_if" "$peer_mac" "$host_mac" "$host_ip" "$peer_ip" <<'EOF'
import sys
from txframes import FrameSender
s = FrameSender(*sys.argv[1:6])
for seq in range(100):
    s.send(0, seq)
for seq in list(range(50)) + [49]:  # 50 distinct, one duplicate
    s.send(1, seq)
s.send(0, 0, magic=0)  # not a txpath frame
EOF
  wait "$sink_pid"
  rc=$?
  [ "$rc" -eq 0 ] || { echo "FAIL: sink exit $rc"; cat "$tmp/sink.err"; fail=1; }
  if ! jq -e '
    (.senders | length == 2) and
    (.senders[0] | .sender == 0 and .received == 100 and .lost == 0 and .max_seq == 99) and
    (.senders[1] | .sender == 1 and .received == 50 and .duplicated == 1 and .max_seq == 49) and
    (.received == 150 and .frames == 151 and .other >= 1) and
    has("socket_drops") and has("seconds") and (.interface == "'"$peer_if"'")
  ' "$tmp/sink.json" >/dev/null; then
    echo "FAIL: sink JSON"; cat "$tmp/sink.json" "$tmp/sink.err"; fail=1
  fi
  grep -Eq "^ +total +150 " "$tmp/sink.err" || { echo "FAIL: sink table on stderr"; cat "$tmp/sink.err"; fail=1; }
else
  echo "note: python3 missing, sink counting part skipped"
fi

# sink ends cleanly on SIGINT (no --duration).
"$bin" sink "$peer_if" --netns "$netns" >"$tmp/int.out" 2>&1 &
sink_pid=$!
for _ in $(seq 100); do grep -q "counting on" "$tmp/int.out" && break; sleep 0.05; done
kill -INT "$sink_pid"
wait "$sink_pid"
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: sink after SIGINT exit $rc"; cat "$tmp/int.out"; fail=1; }
grep -q "other frames: " "$tmp/int.out" || { echo "FAIL: no table after SIGINT"; cat "$tmp/int.out"; fail=1; }

# down, then show / down again.
"$bin" testbed down "${names[@]}" >"$tmp/down"
rc=$?
[ "$rc" -eq 0 ] && grep -q "^removed $host_if" "$tmp/down" || { echo "FAIL: down exit $rc"; cat "$tmp/down"; fail=1; }
[ -e "/sys/class/net/$host_if" ] && { echo "FAIL: $host_if still there"; fail=1; }
ip netns list | grep -qw "$netns" && { echo "FAIL: netns $netns still there"; fail=1; }
out=$("$bin" testbed show --host-if "$host_if")
rc=$?
[ "$rc" -eq 1 ] && [ "$out" = "no testbed on $host_if" ] || { echo "FAIL: show after down: exit $rc, $out"; fail=1; }
out=$("$bin" testbed down "${names[@]}")
rc=$?
[ "$rc" -eq 0 ] && [ "$out" = "no testbed made by txpath on $host_if (nothing removed)" ] || { echo "FAIL: second down: exit $rc, $out"; fail=1; }

[ "$fail" -eq 0 ] && echo "testbed_sink: all checks passed"
exit "$fail"
