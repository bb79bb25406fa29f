#!/usr/bin/env bash
# `txpath tc` from the command line: tc's exit statuses with one error line, the configuration
# file (--config, $TXPATH_TC), -batch, -j, and live statistics of a running `txpath bench
# --tc-config FILE` read by `txpath tc -s`.
set -u
bin=$(realpath "${1:?usage: tc.sh PATH_TO_TXPATH}")
tmp=$(mktemp -d)
bench_pid=""
cleanup() {
  [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null && wait "$bench_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
conf="$tmp/txpath.tc"
tc() { "$bin" tc --config "$conf" "$@"; }

expect() {  # expect STATUS ARGS...: exit status STATUS; if non-zero, exactly one stderr line
  local want=$1 err rc lines
  shift
  err=$(tc "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [ "$rc" -ne "$want" ] || { [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; }; then
    echo "FAIL: tc $* -> exit $rc (want $want), stderr: $err"
    fail=1
  fi
}

expect 0 link add dev d0 txqueuelen 500
expect 0 qdisc add dev d0 root handle 1: htb default 10
expect 0 class add dev d0 parent 1: classid 1:1 htb rate 100mbit
expect 0 class add dev d0 parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit
expect 0 class add dev d0 parent 1:1 classid 1:20 htb rate 70mbit ceil 100mbit
expect 0 qdisc add dev d0 parent 1:10 handle 10: fq_codel
expect 2 qdisc add dev d0 root handle 1: htb
expect 1 qdisc add dev d0 root handle 2: htb bogus
expect 255 qdisc add dev d0 root handle 10000: htb
expect 1 qdisc add dev nosuch root pfifo
expect 2 class del dev d0 classid 1:1
expect 255 -nosuch qdisc show

out=$(tc qdisc show dev d0)
echo "$out" | grep -q '^qdisc htb 1: root refcnt 2 r2q 10 default 0x10 direct_packets_stat 0 direct_qlen 500' ||
  { echo "FAIL: qdisc show: $out"; fail=1; }
echo "$out" | grep -q '^qdisc fq_codel 10: parent 1:10 limit 10240p' || { echo "FAIL: child: $out"; fail=1; }
out=$(tc class show dev d0)
echo "$out" | grep -q '^class htb 1:10 parent 1:1 leaf 10: prio 0 rate 30Mbit ceil 100Mbit' ||
  { echo "FAIL: class show: $out"; fail=1; }
tc -j qdisc show dev d0 | jq -e '.[0].kind == "htb" and .[0].root == true and .[1].parent == "1:10"' >/dev/null ||
  { echo "FAIL: -j qdisc show"; fail=1; }
tc -s -j class show dev d0 | jq -e 'length == 3 and (.[1] | has("tokens") and has("lended"))' >/dev/null ||
  { echo "FAIL: -s -j class show: $(tc -s -j class show dev d0)"; fail=1; }

# $TXPATH_TC names the file when --config is not given.
TXPATH_TC="$conf" "$bin" tc qdisc show dev d0 | grep -q 'qdisc htb 1:' || { echo "FAIL: TXPATH_TC"; fail=1; }

# -batch: stops at the first failing line (exit 1, as tc's batch mode), names it, keeps what worked.
printf 'link add dev d1\nqdisc add dev d1 root handle 1: prio\nqdisc add dev d1 root handle 1: prio\nlink add dev d2\n' > "$tmp/batch"
err=$(tc -batch "$tmp/batch" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] && echo "$err" | grep -q "Command failed $tmp/batch:3" || { echo "FAIL: batch: $rc $err"; fail=1; }
tc link show | grep -q '^d1:' && ! tc link show | grep -q '^d2:' || { echo "FAIL: batch effects"; fail=1; }

# The bench runs on the configuration's tree and tc -s reads its counters meanwhile.
"$bin" bench --tc-config "$conf" --tc-dev d0 --strategy busylock --threads 2 --duration 4 --repeat 1 \
  --device null --no-kernel-row >"$tmp/bench.out" 2>&1 &
bench_pid=$!
seen=""
for _ in $(seq 1 60); do
  sleep 0.2
  s=$(tc -s qdisc show dev d0 2>/dev/null)
  if echo "$s" | grep -q ' Sent [1-9][0-9]* bytes [1-9][0-9]* pkt'; then seen=$s; break; fi
done
[ -n "$seen" ] || { echo "FAIL: no live counters from the running bench: $(tc -s qdisc show dev d0 2>&1)"; fail=1; }
wait "$bench_pid"; rc=$?; bench_pid=""
[ "$rc" -eq 0 ] || { echo "FAIL: bench exit $rc: $(cat "$tmp/bench.out")"; fail=1; }
grep -q 'htb r2q 10 default 0x10' "$tmp/bench.out" || { echo "FAIL: bench did not report the tc tree"; fail=1; }
# After the process ends tc shows the idle configuration again.
tc -s qdisc show dev d0 | grep -q ' Sent 0 bytes 0 pkt' || { echo "FAIL: stale counters"; fail=1; }

[ "$fail" -eq 0 ] && echo "tc CLI: ok"
exit "$fail"
