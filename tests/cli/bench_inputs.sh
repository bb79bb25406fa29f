#!/usr/bin/env bash
# `txpath bench`'s inputs and signals (issue 31, classes 8, 9, 10 and 14):
#  - a FIFO where a file is meant never blocks: --source pcap:FIFO (not a regular file),
#    --device pcap:FIFO and --json/--csv/--plot FIFO that nobody reads exit 2 with one line, at
#    once; a FIFO output that is read gets the whole output.
#  - --sndbuf over 1 GiB for a thread count's senders together: exit 2, one line.
#  - --queues over the device kind's cap: exit 2, one line.
#  - numbers: a value past its type's range is "out of range", a negative one "must be
#    non-negative", for every integer option (no silent clamp of --seed to 2^64-1).
#  - one SIGTERM sent twice by the same process (as timeout(1) sends it to its child and then to
#    the child's group) is one stop: partial outputs, 143; two signals from elsewhere still exit
#    at once.
#  - a capture rewritten between rounds: every round replays the capture as it was read at the
#    start, and the bench exits 0 with all its rounds.
# Every bench here runs under `timeout -s KILL`, so a hang fails instead of stalling the suite.
set -u
bin=${1:?usage: bench_inputs.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit), bad
not_under address "signals and FIFOs, not memory,"
bg=""
reader=""
inputs_cleanup() {
  [ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null
  [ -n "$reader" ] && kill -KILL "$reader" 2>/dev/null
  common_cleanup
}
trap inputs_cleanup EXIT
FAIL() { echo "FAIL: $*"; fail=1; }

quick=(--device null --strategy busylock --threads 1 --duration 0.01 --repeat 1 --quiet)

# bad_now ARGS...: as bad (exit 2, one line, printed on stdout), but killed after 30 s: a FIFO
# that blocked in open() for ever before fails here as exit 137.
bad_now() {
  local err rc
  err=$(timeout -s KILL 30 "$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [ "$(printf '%s' "$err" | grep -c '')" -ne 1 ]; then
    FAIL "txpath $(printf '%q ' "$@" | cut -c1-160)-> exit $rc: $err"
  fi
  printf '%s\n' "$err"
}

# A classic pcap capture of N txpath frames (UDP source port 2000+i), 10 us apart. $1 file, $2 N.
write_pcap() {
  python3 - "$@" <<'EOF'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
out = struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
for i in range(n):
    pl = struct.pack('!IIQ', 0x54585031, 5, i) + bytes(16)
    udp = struct.pack('!HHHH', 2000 + i, 9000, 8 + len(pl), 0) + pl
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    f = bytes.fromhex('020000000002020000000001') + b'\x08\x00' + ip + udp
    out += struct.pack('<IIII', 1, i * 10, len(f), len(f)) + f
open(path, 'wb').write(out)
EOF
}

# A reader of FIFO $1 that shrinks its buffer to one page and reads nothing until file $2 exists,
# then reads what comes into $3 until its writers are gone. Returns once it holds the FIFO open.
slow_reader() {
  rm -f "$tmp/ready" "$2" "$3"
  python3 - "$@" "$tmp/ready" <<'EOF' &
import fcntl, os, sys, time
fifo, go, out, ready = sys.argv[1:5]
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ: one page
open(ready, 'w').close()
while not os.path.exists(go):
    time.sleep(0.02)
got = False
with open(out, 'wb') as f:
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:  # a writer, nothing written yet
            time.sleep(0.01)
            continue
        if not b:  # no writer: not there yet, or gone after writing
            if got:
                break
            time.sleep(0.01)
            continue
        got = True
        f.write(b)
EOF
  reader=$!
  for _ in $(seq 200); do [ -e "$tmp/ready" ] && return 0; sleep 0.05; done
  return 1
}
# Waits (at most 20 s) for the background bench; sets rc to its exit status, or "hung".
finish() {
  for _ in $(seq 400); do
    if ! kill -0 "$bg" 2>/dev/null; then
      wait "$bg"
      rc=$?
      bg=""
      return
    fi
    sleep 0.05
  done
  kill -KILL "$bg" 2>/dev/null
  wait "$bg" 2>/dev/null
  bg=""
  rc=hung
}

# ---- class 8: FIFOs -----------------------------------------------------------------------------
mkfifo "$tmp/fifo"
out=$(bad_now bench "${quick[@]}" --source pcap:"$tmp/fifo")
grep -qF -- "--source pcap:\"$tmp/fifo\": not a regular file" <<<"$out" || FAIL "--source pcap:FIFO: $out"
out=$(bad_now bench --strategy busylock --threads 1 --duration 0.01 --repeat 1 --quiet --device pcap:"$tmp/fifo")
grep -qF "device 'pcap:$tmp/fifo': a FIFO that nobody reads" <<<"$out" || FAIL "--device pcap:FIFO: $out"
for flag in --json --csv --plot; do
  out=$(bad_now bench "${quick[@]}" "$flag" "$tmp/fifo")
  [ "$out" = "txpath: error: $flag \"$tmp/fifo\": a FIFO that nobody reads" ] || FAIL "$flag FIFO: $out"
done
# A FIFO that is read gets the whole JSON (the check's open does not end the reader's file).
slow_reader "$tmp/fifo" "$tmp/go" "$tmp/fifo.json" || FAIL "the FIFO's reader did not start"
touch "$tmp/go"
timeout -s KILL 60 "$bin" bench "${quick[@]}" --json "$tmp/fifo" >/dev/null 2>"$tmp/err"
rc=$?
wait "$reader"
reader=""
[ "$rc" -eq 0 ] && jq -e '.results | length == 1' "$tmp/fifo.json" >/dev/null ||
  FAIL "--json FIFO with a reader: exit $rc: $(cat "$tmp/err") $(head -c 200 "$tmp/fifo.json")"

# ---- class 9: --sndbuf ------------------------------------------------------------------------
# (ulimit -v: the code before this check allocated the whole budget up front)
out=$(memcap 3000000; bad_now bench "${quick[@]}" --sndbuf 4294967296)
grep -qF "sndbuf 4294967296 times 1 sender is over the limit of 1024 MiB of send buffers in total" <<<"$out" ||
  FAIL "--sndbuf 4294967296: $out"
out=$(memcap 3000000; bad_now bench --device null --strategy busylock --threads 1,2 --duration 0.01 --repeat 1 --sndbuf 1073741824)
grep -qF "at most 536870912 per sender at 2 threads" <<<"$out" || FAIL "--sndbuf 1 GiB x 2: $out"

# ---- class 10: --queues ------------------------------------------------------------------------
# 600 queues took 23 s for a 0.1 s run on 2 cores, 800 did not end in 60 s: a count past the
# machine's cap (8 per hardware thread, at least 64) is refused before anything runs.
pus=$(nproc --all)
cap=$(( pus * 8 > 64 ? pus * 8 : 64 ))
[ "$cap" -gt 4096 ] && cap=4096
out=$(bad_now bench --device null --strategy busylock --threads 1 --duration 0.1 --repeat 1 --queues $((cap + 1)))
grep -qF "queue count $((cap + 1)) is over this machine's limit of $cap TX queues for a bench run" <<<"$out" ||
  FAIL "--queues $((cap + 1)): $out"
out=$(bad_now bench --device null:queues=$((cap + 1)) --strategy busylock --threads 1 --duration 0.1 --repeat 1)
grep -qF "limit of $cap TX queues" <<<"$out" || FAIL "null:queues=$((cap + 1)): $out"
timeout -s KILL 60 "$bin" bench "${quick[@]}" --queues 64 >/dev/null 2>"$tmp/err" || FAIL "--queues 64: $(cat "$tmp/err")"

# ---- class 14: numbers ------------------------------------------------------------------------
out=$(bad_now bench "${quick[@]}" --seed 18446744073709551616)
[ "$out" = 'txpath: error: --seed: "18446744073709551616" is out of range (at most 18446744073709551615)' ] ||
  FAIL "--seed 2^64: $out"
out=$(bad_now bench "${quick[@]}" --seed -1)
[ "$out" = 'txpath: error: --seed: "-1" must be non-negative' ] || FAIL "--seed -1: $out"
timeout -s KILL 60 "$bin" bench "${quick[@]}" --seed 0018446744073709551615 >"$tmp/seed.out" 2>&1 &&
  grep -q -- '--seed 18446744073709551615)' "$tmp/seed.out" || FAIL "--seed 2^64-1: $(cat "$tmp/seed.out")"
for opt in --payload --burst --sndbuf --repeat --nodes --flows --seed; do
  out=$(bad_now bench "${quick[@]}" "$opt" 99999999999999999999999)
  grep -qF -- "$opt: \"99999999999999999999999\" is out of range (at most " <<<"$out" || FAIL "$opt huge: $out"
  out=$(bad_now bench "${quick[@]}" "$opt" -3)
  [ "$out" = "txpath: error: $opt: \"-3\" must be non-negative" ] || FAIL "$opt -3: $out"
done
out=$(bad_now testbed up --mtu 99999999999)
[ "$out" = 'txpath: error: --mtu: "99999999999" is out of range (at most 4294967295)' ] || FAIL "testbed --mtu: $out"
out=$(bad_now testbed up --queues -2)
[ "$out" = 'txpath: error: --queues: "-2" must be non-negative' ] || FAIL "testbed --queues -2: $out"
for opt in --duration --interval --rate; do
  out=$(bad_now bench "${quick[@]}" "$opt" -0.5)
  [ "$out" = "txpath: error: $opt: \"-0.5\" must be non-negative" ] || FAIL "$opt -0.5: $out"
done

# ---- class 14: one signal, sent twice by one process ------------------------------------------
# Starts a long bench (its SVG into the FIFO) and waits for its first progress line.
start_long() {
  rm -f "$tmp/sig.json" "$tmp/sig.err"
  env --default-signal=INT,TERM "$bin" bench --device null --strategy busylock --threads 1 \
    --duration 30 --repeat 1 --json "$tmp/sig.json" --plot "$tmp/fifo" >/dev/null 2>"$tmp/sig.err" &
  bg=$!
  for _ in $(seq 200); do
    grep -q '^txpath bench: \[1/' "$tmp/sig.err" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
# `timeout` kills its child, then the child's group: the same signal from the same process,
# the second after the first one's handler ran (here 0.3 s later; timeout's come closer).
slow_reader "$tmp/fifo" "$tmp/go" "$tmp/sig.svg" || FAIL "the FIFO's reader did not start"
start_long || FAIL "one signal twice: no progress line: $(cat "$tmp/sig.err")"
sleep 1  # a row that measured something: its SVG is larger than the FIFO's page
kill -TERM "$bg"
sleep 0.3
kill -TERM "$bg"
sleep 0.5
kill -0 "$bg" 2>/dev/null || FAIL "one SIGTERM sent twice by one process was taken as a second signal (exit at once)"
touch "$tmp/go"
finish
wait "$reader"
reader=""
[ "$rc" = 143 ] || FAIL "one signal twice: exit $rc, not 143: $(cat "$tmp/sig.err")"
jq -e '.partial == true' "$tmp/sig.json" >/dev/null 2>&1 || FAIL "one signal twice: JSON not written partial"
grep -q 'partial' "$tmp/sig.svg" && grep -q '</svg>' "$tmp/sig.svg" || FAIL "one signal twice: SVG not whole"
# Two processes that each send SIGTERM: two requests, the second exits at once.
slow_reader "$tmp/fifo" "$tmp/go" "$tmp/sig.svg" || FAIL "the FIFO's reader did not start"
start_long || FAIL "two senders: no progress line"
kill -TERM "$bg"
sleep 0.3
env kill -TERM "$bg"  # another process
for _ in $(seq 100); do kill -0 "$bg" 2>/dev/null || break; sleep 0.05; done
kill -0 "$bg" 2>/dev/null && FAIL "a second SIGTERM from another process did not exit at once"
finish
kill -KILL "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
reader=""
[ "$rc" = 143 ] || FAIL "two senders: exit $rc, not 143"

# ---- class 14: a capture rewritten between rounds ---------------------------------------------
write_pcap "$tmp/cap.pcap" 64
timeout -s KILL 120 "$bin" bench --device null --strategy busylock --threads 1 --duration 0.3 --repeat 4 \
  --source pcap:"$tmp/cap.pcap" --json "$tmp/cap.json" >"$tmp/cap.out" 2>"$tmp/cap.err" &
bg=$!
for _ in $(seq 400); do grep -q '\[2/4\]' "$tmp/cap.err" 2>/dev/null && break; sleep 0.02; done
printf 'not a capture any more' >"$tmp/cap.pcap"  # in place: the same file, other bytes
wait "$bg"
rc=$?
bg=""
[ "$rc" -eq 0 ] || FAIL "capture rewritten between rounds: exit $rc: $(cat "$tmp/cap.err")"
jq -e '.results | length == 1 and (.[0].runs == 4) and .[0].conserved and .[0].sent > 0' "$tmp/cap.json" >/dev/null 2>&1 ||
  FAIL "capture rewritten between rounds: not 4 rounds in the JSON"

[ "$fail" -eq 0 ] && echo "bench_inputs: all checks passed"
exit "$fail"
