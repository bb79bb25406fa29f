#!/usr/bin/env bash
# `txpath bench` offered load and traffic (--rate, --rate-per-sender, --flows, --source
# pcap:FILE, --replay-speed) and the latency histograms in the JSON: bad values exit 2 with one
# line; a paced run sends no more than it was offered (an upper bound: a slow machine sends less,
# never more); flows reach fq_codel; a capture is replayed frame for frame.
set -u
bin=${1:?usage: bench_traffic.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit), bad

# A classic pcap capture written here: N txpath frames (sender 5, seq i, UDP source port 2000+i),
# 10 us apart. $1 file, $2 N, $3 magic (a1b2c3d4 or a1b23c4d), $4 byte order (< or >).
write_pcap() {
  python3 - "$@" <<'EOF'
import struct, sys
path, n, magic, order = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 16), sys.argv[4]
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
out = struct.pack(order + 'IHHiIII', magic, 2, 4, 0, 0, 65535, 1)
tick = 1000 if magic == 0xa1b23c4d else 1
for i in range(n):
    pl = struct.pack('!IIQ', 0x54585031, 5, i) + bytes(16)
    udp = struct.pack('!HHHH', 2000 + i, 9000, 8 + len(pl), 0) + pl
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    f = bytes.fromhex('020000000002020000000001') + b'\x08\x00' + ip + udp
    out += struct.pack(order + 'IIII', 1, i * 10 * tick, len(f), len(f)) + f
open(path, 'wb').write(out)
EOF
}

# Bad values: exit 2, one line.
bad bench --rate 0
bad bench --rate -5
bad bench --rate abc
bad bench --rate-per-sender 0
bad bench --rate 1000 --rate-per-sender 1000
bad bench --flows 0
bad bench --flows 4097
bad bench --flows x
bad bench --device null --threads 2 --flows 4000
bad bench --replay-speed 2
bad bench --source ""
bad bench --source file:x --device null
bad bench --source pcap: --device null
bad bench --source pcap:"$tmp/missing.pcap" --device null
write_pcap "$tmp/good.pcap" 6 a1b2c3d4 '<'
bad bench --source pcap:"$tmp/good.pcap" --replay-speed 0 --device null
bad bench --source pcap:"$tmp/good.pcap" --replay-speed 2 --rate 1000 --device null
bad bench --source pcap:"$tmp/good.pcap" --flows 4 --device null
bad bench --source pcap:"$tmp/good.pcap" --strategy kernel --device null
# Bad captures: one line naming the file, quoted and escaped, exit 2.
printf 'not a capture at all, just text' >"$tmp/text.pcap"
out=$(bad bench --device null --source pcap:"$tmp/text.pcap")
grep -q "\"$tmp/text.pcap\": not a pcap or pcapng file" <<<"$out" || { echo "FAIL: bad magic: $out"; fail=1; }
head -c 100 "$tmp/good.pcap" >"$tmp/cut.pcap"
out=$(bad bench --device null --source pcap:"$tmp/cut.pcap")
grep -q "cut short by the end of the file" <<<"$out" || { echo "FAIL: truncated record: $out"; fail=1; }
python3 -c "
import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[20] = 113
open(sys.argv[2], 'wb').write(b)" "$tmp/good.pcap" "$tmp/linux sll
.pcap"
out=$(bad bench --device null --source pcap:"$tmp/linux sll
.pcap")
grep -q 'linux sll\\x0a.pcap": link type 113, not Ethernet' <<<"$out" || { echo "FAIL: link type: $out"; fail=1; }
python3 -c "
import struct, sys
f = bytes.fromhex('020000000002020000000001') + bytes.fromhex('0800') + bytes(1586)
open(sys.argv[1], 'wb').write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1) +
                              struct.pack('<IIII', 1, 0, len(f), len(f)) + f)" "$tmp/jumbo.pcap"
out=$(bad bench --device null --source pcap:"$tmp/jumbo.pcap")
grep -q "over the device's maximum frame" <<<"$out" || { echo "FAIL: frame too large: $out"; fail=1; }

# --rate: the achieved rate stays under what was offered (+20%: the pacer's one catch-up burst);
# every row is paced, the floor's too; the JSON says what was offered.
if ! "$bin" bench --device null --strategy floor,busylock --threads 2 --duration 0.3 --repeat 1 \
     --rate 20000 --quiet --json "$tmp/rate.json" >"$tmp/rate.out" 2>&1; then
  echo "FAIL: --rate run exited non-zero"; cat "$tmp/rate.out"; fail=1
fi
grep -q "^traffic: offered 20000 pps in total" "$tmp/rate.out" || { echo "FAIL: no traffic line"; cat "$tmp/rate.out"; fail=1; }
jq -e '(.config.rate_pps == 20000) and (.results | length == 2) and
       (.results | all(.offered_mpps == 0.02 and .mpps > 0 and .mpps <= 0.024 and .conserved))' \
   "$tmp/rate.json" >/dev/null || { echo "FAIL: --rate JSON"; cat "$tmp/rate.json"; fail=1; }
if ! "$bin" bench --device null --strategy busylock --threads 2 --duration 0.2 --repeat 1 \
     --rate-per-sender 5000 --quiet --json "$tmp/rps.json" >"$tmp/rps.out" 2>&1; then
  echo "FAIL: --rate-per-sender run exited non-zero"; cat "$tmp/rps.out"; fail=1
fi
jq -e '(.config.rate_per_sender_pps == 5000) and
       (.results | all(.offered_mpps == 0.01 and .mpps <= 0.012 and .conserved))' \
   "$tmp/rps.json" >/dev/null || { echo "FAIL: --rate-per-sender JSON"; cat "$tmp/rps.json"; fail=1; }

# A very low rate (one packet a minute per sender) still ends when the run does: a paced
# sender's sleep is short, whatever the rate (generous bound: only a hang fails it).
if ! timeout 60 "$bin" bench --device null --strategy floor,busylock --threads 64 --no-pin --duration 0.1 \
     --repeat 1 --rate 1 --quiet >"$tmp/low.out" 2>&1; then
  echo "FAIL: --rate 1 with 64 senders did not end with the run"; cat "$tmp/low.out"; fail=1
fi

# Latency: p50/p90/p99/p99.9 of send() and of the queueing delay, ordered, and both histograms
# whole (their counts add up; bucket bounds in order).
jq -e '.results | all(
         (.send_p50_ns <= .send_p90_ns and .send_p90_ns <= .send_p99_ns and .send_p99_ns <= .send_p999_ns) and
         (.queue_p50_ns > 0 and .queue_p50_ns <= .queue_p999_ns) and
         ([.send_latency_histogram.buckets[][2]] | add) == .send_latency_histogram.count and
         ([.queue_delay_histogram.buckets[][2]] | add) == .queue_delay_histogram.count and
         (.queue_delay_histogram.unit == "ns") and
         (.send_latency_histogram.buckets | all(.[0] <= .[1])))' "$tmp/rate.json" >/dev/null ||
  { echo "FAIL: latency percentiles or histograms"; cat "$tmp/rate.json"; fail=1; }

# --flows with fq_codel: every point runs N flows per sender and conserves (the flow count
# fq_codel sees is unit-tested: Flows.FqCodelSeesEveryFlowOfEverySender).
if ! "$bin" bench --device null --strategy floor,busylock,drainer --threads 2 --duration 0.05 \
     --repeat 1 --qdisc fq_codel --flows 16 --quiet --json "$tmp/flows.json" >"$tmp/flows.out" 2>&1; then
  echo "FAIL: --flows run exited non-zero"; cat "$tmp/flows.out"; fail=1
fi
jq -e '(.config.flows == 16) and (.results | all(.flows == 16 and .conserved and .sent > 0))' \
   "$tmp/flows.json" >/dev/null || { echo "FAIL: --flows JSON"; cat "$tmp/flows.json"; fail=1; }

# --source pcap: one sender through a FIFO into a pcap device replays the capture in order,
# looping: output frame j is capture frame j % 6, and the device wrote what the JSON says sent.
for order in '<' '>'; do
  for magic in a1b2c3d4 a1b23c4d; do
    write_pcap "$tmp/in.pcap" 6 "$magic" "$order"
    rm -f "$tmp/replayed.pcap"
    if ! "$bin" bench --device pcap:"$tmp/replayed.pcap" --strategy busylock --qdisc pfifo \
         --threads 1 --duration 0.05 --repeat 1 --source pcap:"$tmp/in.pcap" --quiet \
         --json "$tmp/replay.json" >"$tmp/replay.out" 2>&1; then
      echo "FAIL: replay ($magic $order) exited non-zero"; cat "$tmp/replay.out"; fail=1; continue
    fi
    sent=$(jq '.results[0].sent' "$tmp/replay.json")
    python3 - "$tmp/in.pcap" "$tmp/replayed.pcap" "$sent" <<'EOF' || { echo "FAIL: replayed frames ($magic $order)"; fail=1; }
import struct, sys
def frames(path):
    b = open(path, 'rb').read()
    order = '<' if b[:4] in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1') else '>'
    at, out = 24, []
    while at < len(b):
        _, _, incl, _ = struct.unpack(order + 'IIII', b[at:at + 16])
        out.append(b[at + 16:at + 16 + incl]); at += 16 + incl
    return out
cap, got, sent = frames(sys.argv[1]), frames(sys.argv[2]), int(sys.argv[3])
assert sent > 0 and len(got) == sent, (len(got), sent)
assert all(f == cap[j % len(cap)] for j, f in enumerate(got)), 'a frame out of order or not from the capture'
EOF
  done
done
# Three senders share a capture (t, t+3, ...), at its own timing 1000x as fast, and conserve; the
# sink does not count foreign frames (no "sink" in the JSON).
if ! "$bin" bench --device null --strategy floor,busylock --threads 3 --duration 0.05 --repeat 1 \
     --source pcap:"$tmp/good.pcap" --replay-speed 1000 --quiet --json "$tmp/speed.json" >"$tmp/speed.out" 2>&1; then
  echo "FAIL: --replay-speed run exited non-zero"; cat "$tmp/speed.out"; fail=1
fi
jq -e '(.config.replay_speed == 1000) and (.config.source | startswith("pcap:")) and
       (.results | all(.conserved and .sent > 0 and (has("sink") | not)))' "$tmp/speed.json" >/dev/null ||
  { echo "FAIL: --replay-speed JSON"; cat "$tmp/speed.json"; fail=1; }

[ "$fail" -eq 0 ] && echo "bench_traffic: all checks passed"
exit "$fail"
