#!/usr/bin/env bash
# Real devices from the command line: `txpath bench --device afpacket:IF` on a veth testbed runs
# the kernel row beside txpath's strategies and checks every row at the sink; devices that
# cannot be opened (missing interface, missing permission) give one error line and exit 2.
# Needs root past the first checks: without root it prints SKIP and passes, unless CI is set.
set -u
bin=$(realpath "${1:?usage: real_devices.sh PATH_TO_TXPATH}")
. "$(dirname "$0")/lib/common.bash"
host_if="rc${id}a"
peer_if="rc${id}b"
netns="txpath-r$$"
names=(--host-if "$host_if" --peer-if "$peer_if" --netns "$netns")
addrs=(--host-addr "10.80.$x.1/24" --peer-addr "10.80.$x.2/24")
root_cleanup() {
  "$bin" testbed down "${names[@]}" >/dev/null 2>&1
}


# Spec errors need no privilege.
bad bench --device afpacket: --threads 1 >/dev/null
bad bench --device afpacket:lo,ring=3 --threads 1 >/dev/null
bad bench --device udp:10.0.0.1 --threads 1 >/dev/null
bad bench --device pcap: --threads 1 >/dev/null
bad bench --device afxdp: --threads 1 >/dev/null
bad bench --device null --sink "x@" --threads 1 >/dev/null
# queues=N: out of range, past a kind's own limit, or on pcap (one file, one queue).
bad bench --device afpacket:lo,queues=0 --threads 1 >/dev/null
bad bench --device udp:10.0.0.1:9,queues=5000 --threads 1 >/dev/null
bad bench --device tun:x,queues=257 --threads 1 >/dev/null
bad bench --device afxdp:lo:4095,queues=2 --threads 1 >/dev/null
out=$(bad bench --device "pcap:$tmp/q.pcap,queues=2" --threads 1)
want="device 'pcap:$tmp/q.pcap,queues=2': pcap writes one file, so it has one TX queue"
case "$out" in *"$want"*) ;;
  *) echo "FAIL: pcap queues=2 message: $out"; fail=1 ;; esac

needs_root "the rest needs root"

out=$(bad bench --device afpacket:nosuch0 --threads 1)
case "$out" in *"device 'afpacket:nosuch0': no such interface 'nosuch0'"*) ;;
  *) echo "FAIL: missing interface message: $out"; fail=1 ;; esac

"$bin" testbed up "${names[@]}" "${addrs[@]}" >/dev/null || { echo "FAIL: testbed up"; exit 1; }

# Missing permission: the same command as an unprivileged user.
if command -v setpriv >/dev/null; then
  out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
        "$bin" bench --device "afpacket:$host_if" --threads 1 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [ "$(printf '%s' "$out" | grep -c '')" -ne 1 ]; then
    echo "FAIL: unprivileged afpacket -> exit $rc: $out"; fail=1
  fi
  case "$out" in *"Operation not permitted"*"CAP_NET_RAW"*) ;;
    *) echo "FAIL: permission message: $out"; fail=1 ;; esac
fi


# The kernel row is added for afpacket, and every row is checked at the sink.
if ! "$bin" bench --device "afpacket:$host_if" --strategy busylock,drainer --threads 2 \
     --duration 0.05 --repeat 1 --quiet --json "$tmp/out.json" > "$tmp/out.txt"; then
  echo "FAIL: bench on afpacket:$host_if"; cat "$tmp/out.txt"; fail=1
fi
grep -q '^kernel ' "$tmp/out.txt" || { echo "FAIL: no kernel row"; cat "$tmp/out.txt"; fail=1; }
grep -q '^Arrivals at the sink' "$tmp/out.txt" || { echo "FAIL: no sink table"; fail=1; }
# The table keeps 120 columns with a real device's extra columns (vs kernel, lost%).
grep -q 'vs kernel' "$tmp/out.txt" && grep -q 'lost%' "$tmp/out.txt" || { echo "FAIL: no vs kernel or lost% column"; fail=1; }
grep -v '^topology: \|^config: ' "$tmp/out.txt" | awk 'length($0) > 120 { bad = 1; print "FAIL: over 120 columns: " $0 } END { exit bad }' || fail=1
if ! jq -e '[.results[] | .strategy] == ["busylock", "drainer", "kernel"] and
            all(.results[]; .sink.duplicated == 0 and .sink.delivered and
                (.strategy == "kernel" or .sink.out_of_order == 0) and
                .sink.received + .sink.lost == .sent and .sink.received > 0 and .vs_kernel_mpps > 0)' \
     "$tmp/out.json" >/dev/null; then
  echo "FAIL: JSON sink fields"; jq -c '.results[]' "$tmp/out.json"; fail=1
fi
# The kernel row ran (config.kernel_row says so) and has no txpath qdisc; txpath's rows keep
# their tree's final tc statistics.
jq -e '.config.kernel_row == true and (.results[] | select(.strategy == "kernel") | has("tc") | not) and
       all(.results[] | select(.strategy != "kernel"); .tc.qdiscs[0].kind == "pfifo_fast" and .tc.qdiscs[0].packets > 0)' \
   "$tmp/out.json" >/dev/null || { echo "FAIL: kernel_row / tc statistics"; jq -c '.config, .results[].tc' "$tmp/out.json"; fail=1; }

# The DPDK peers on the same interface (issue 32): peer:dpdk's numbered frames are checked at the
# sink as txpath's are; peer:testpmd's arrivals come from the interface's own counter. Where
# DPDK is missing each is skipped with one line and the run goes on.
if ! "$bin" bench --device "afpacket:$host_if" --strategy floor,peer:dpdk,peer:testpmd --threads 1 --burst 32 \
     --duration 0.1 --repeat 1 --no-kernel-row --json "$tmp/dpdk.json" > "$tmp/dpdk.txt" 2>&1; then
  echo "FAIL: bench with the DPDK peers"; cat "$tmp/dpdk.txt"; fail=1
fi
if ! jq -e '(.config.skipped | length) as $skipped | ([.results[] | .strategy] | index("peer:dpdk")) as $dpdk |
            ([.results[] | .strategy] | length) == 3 - $skipped and
            all(.results[]; .conserved and .sent > 0 and .sink.received > 0 and
                .sink.received + .sink.lost == .sent and .sink.duplicated == 0) and
            all(.results[] | select(.strategy == "peer:dpdk"); .submitted == .sent and .sink.out_of_order == 0) and
            all(.results[] | select(.strategy != "peer:dpdk"); .vs_dpdk_mpps > 0 or $dpdk == null)' \
     "$tmp/dpdk.json" >/dev/null; then
  echo "FAIL: the DPDK peers' rows"; cat "$tmp/dpdk.txt"; jq -c '.config.skipped, .results[]' "$tmp/dpdk.json"; fail=1
fi
[ "$(grep -c '^skipped: ' "$tmp/dpdk.txt")" -eq "$(jq '.config.skipped | length' "$tmp/dpdk.json")" ] ||
  { echo "FAIL: one line per skipped peer"; cat "$tmp/dpdk.txt"; fail=1; }
# No DPDK runtime folder outlives its process (txpath-PID, txpath-testpmd-PID; other tests' runs
# may hold theirs right now).
for d in /var/run/dpdk/txpath-*; do
  [ -e "$d" ] || continue
  [ -d "/proc/${d##*-}" ] || { echo "FAIL: DPDK runtime folder left behind: $d"; fail=1; }
done

# --no-kernel-row leaves it out; --sink none leaves out the check.
"$bin" bench --device "afpacket:$host_if" --strategy busylock --threads 1 --duration 0.05 \
  --repeat 1 --quiet --no-kernel-row --sink none --json "$tmp/b.json" >/dev/null || fail=1
jq -e '[.results[] | .strategy] == ["busylock"] and (.results[0] | has("sink") | not)' \
  "$tmp/b.json" >/dev/null || { echo "FAIL: --no-kernel-row/--sink none"; fail=1; }

exit "$fail"
