#!/usr/bin/env bash
# `txpath sink` against hostile input (issue 12, items 7 and 8).
# Item 7: a newline, an ESC or 100 KB in any sink argument gives exactly one error line on
# stderr, the text quoted and escaped (\x0a, \x1b), cut at 200 bytes, and exit 2.
# Item 8 (root): on a veth pair, 400 frames numbered 2^36-1 from 400 new sender ids, one frame
# from a sender id over the cap and 10 honest frames: the sink stays small (the old one died of
# std::bad_alloc), counts them out_of_window / foreign, and `lost` stays 0.
# Without root the second part prints SKIP, unless CI is set (CI runs as root).
set -u
bin=${1:?usage: sink_hostile.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"
host_if="th${id}a"
peer_if="th${id}b"
netns="txpath-h$$"
root_cleanup() {
  ip link del dev "$host_if" 2>/dev/null
  ip netns del "$netns" 2>/dev/null
}

esc=$'\e'
nl=$'\n'
huge=$(head -c 100000 /dev/zero | tr '\0' y)

# bad ARGS... : exit 2, one stderr line, no raw ESC, no line over 300 bytes; $expect (if set) in it.
bad() {
  local err rc lines
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" == *"$esc"* ]] || [ "${#err}" -gt 300 ] ||
     [[ -n "${expect:-}" && "$err" != *"$expect"* ]]; then
    echo "FAIL: txpath sink ... -> exit $rc, $lines stderr line(s), ${#err} bytes: $(printf '%q' "$err")"
    fail=1
  fi
  expect=
}

expect='sink "l\x0ao": not a valid interface name' bad sink "l${nl}o"
expect='sink "l\x1b[31mo": not a valid interface name' bad sink "l${esc}[31mo"
expect='...": not a valid interface name' bad sink "$huge"
expect='in netns "a\x0ab": not a valid netns name' bad sink lo --netns "a${nl}b"
expect='in netns "a\x1bb"' bad sink lo --netns "a${esc}b"
expect='...": not a valid netns name' bad sink lo --netns "$huge"
expect='--absorb-port: "\x1b[31m" is not a port number in 0..65535' bad sink lo --absorb-port "${esc}[31m"
expect='--absorb-port: "1\x0a2"' bad sink lo --absorb-port "1${nl}2"
expect='--absorb-port: "70000"' bad sink lo --absorb-port 70000
expect='--duration: "1\x0a2" is not a number of seconds in 0..1e9' bad sink lo --duration "1${nl}2"
expect='--duration: "\x1b"' bad sink lo --duration "$esc"
expect='--duration: "0x10"' bad sink lo --duration 0x10
expect='--duration: "-1"' bad sink lo --duration -1
expect='--duration: "inf"' bad sink lo --duration inf
expect='--duration: ""' bad sink lo --duration ''
expect='--json "/nonexistent-dir/\x1b\x0a"' bad sink lo --json "/nonexistent-dir/${esc}${nl}"
expect='extra\x1b' bad sink lo "extra${esc}"
expect='...' bad sink lo "$huge"

needs_root "sink_hostile needs root for the rest (veth pair, network namespace)" \
  "sink_hostile: argument checks passed"
if ! command -v python3 >/dev/null || ! command -v jq >/dev/null; then
  echo "SKIP: python3 and jq are needed for the hostile-frames part"
  exit "$fail"
fi

ip netns add "$netns" && ip link add "$host_if" type veth peer name "$peer_if" netns "$netns" &&
  ip link set dev "$host_if" up && ip -n "$netns" link set dev "$peer_if" up ||
  { echo "FAIL: cannot make the veth pair"; exit 1; }
host_mac=$(cat "/sys/class/net/$host_if/address")
peer_mac=$(ip -n "$netns" -o link show dev "$peer_if" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

"$bin" sink "$peer_if" --netns "$netns" --duration 3 --json - >"$tmp/sink.json" 2>"$tmp/sink.err" &
sink_pid=$!
for _ in $(seq 100); do grep -q "counting on" "$tmp/sink.err" && break; sleep 0.05; done
lib_python3 - "$host_if" "$peer_mac" "$host_mac" <<'PY'
import sys
from txframes import FrameSender
s = FrameSender(*sys.argv[1:4], '10.79.0.1', '10.79.0.2')
for sender in range(100, 500):
    s.send(sender, 2**36 - 1)
s.send(5000, 0)  # a sender id over the cap
for seq in range(10):
    s.send(0, seq)
PY
sleep 1
rss_kb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$sink_pid/status" 2>/dev/null)
wait "$sink_pid"
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: sink exit $rc (134: std::bad_alloc)"; tail -n 5 "$tmp/sink.err"; fail=1; }
# The receive ring is 32 MiB and the per-sender state at most 8.5 MiB.
[ -n "$rss_kb" ] && [ "$rss_kb" -lt 131072 ] || { echo "FAIL: sink peak RSS ${rss_kb:-?} kB"; fail=1; }
if ! jq -e '
  (.out_of_window == 400) and (.lost == 0) and (.foreign == 1) and (.received == 10) and
  (.frames == 410) and (.state_bytes <= 4096 * (128 + 16384 / 8)) and (.resyncs == 0) and
  (.senders | length == 401) and
  (.senders[] | select(.sender == 0) | .received == 10 and .lost == 0 and .max_seq == 9) and
  ([.senders[] | select(.sender >= 100) | .out_of_window] | add == 400)
' "$tmp/sink.json" >/dev/null; then
  echo "FAIL: sink JSON"; head -c 2000 "$tmp/sink.json"; tail -n 5 "$tmp/sink.err"; fail=1
fi
grep -q "foreign frames (sender id >= 4096): 1," "$tmp/sink.err" || { echo "FAIL: sink table"; tail -n 5 "$tmp/sink.err"; fail=1; }

[ "$fail" -eq 0 ] && echo "sink_hostile: all checks passed"
exit "$fail"
