#!/usr/bin/env bash
# Live tc changes (issue 17, "Live"), end to end: while `txpath bench --tc-config` runs, `txpath
# tc qdisc change` reaches it (tc -s shows the new limit with the counters going on) and then
# writes the file; without a running process the file alone changes, as before.
set -u
conf_name=live.tc
. "$(dirname "$0")/lib/live.bash" "$@"  # bin, tmp, bench_pid (killed on exit), fail, conf, tc, bad

tc link add dev d0 || bad "link add"
tc qdisc add dev d0 root handle 1: pfifo limit 1000 || bad "qdisc add"

"$bin" bench --tc-config "$conf" --strategy busylock --device null --threads 1 --repeat 1 --duration 30 >"$tmp/bench.out" 2>&1 &
bench_pid=$!
# Wait (at most 30 s) until the bench serves the configuration: tc -s says nothing on stderr.
for _ in $(seq 300); do
  tc -s qdisc show dev d0 >"$tmp/show" 2>"$tmp/err"
  [ -s "$tmp/err" ] || break
  sleep 0.1
done
[ -s "$tmp/err" ] && bad "the bench never served its counters: $(cat "$tmp/err")"
sent_before=$(grep -o 'Sent [0-9]* bytes [0-9]* pkt' "$tmp/show" | awk '{print $4}')

tc qdisc change dev d0 root handle 1: pfifo limit 7 2>"$tmp/err" || bad "live change: $(cat "$tmp/err")"
grep -q 'limit 7$' "$conf" || bad "the file was not written after the live change: $(cat "$conf")"
tc -s qdisc show dev d0 >"$tmp/show" 2>"$tmp/err"
[ -s "$tmp/err" ] && bad "tc -s after the change: $(cat "$tmp/err")"
sent_after=$(grep -o 'Sent [0-9]* bytes [0-9]* pkt' "$tmp/show" | awk '{print $4}')
[ "${sent_after:-0}" -ge "${sent_before:-1}" ] || bad "the counters restarted: $sent_before -> $sent_after"
# A new root: the running process runs it (tc -s finds every entry of the file in its tree).
tc qdisc replace dev d0 root handle 2: bfifo limit 100000 2>"$tmp/err" || bad "live replace: $(cat "$tmp/err")"
tc -s qdisc show dev d0 >"$tmp/show" 2>"$tmp/err"
grep -q '^qdisc bfifo 2: root' "$tmp/show" || bad "replace: $(cat "$tmp/show")"
[ -s "$tmp/err" ] && bad "the running process did not take the new root: $(cat "$tmp/err")"

# A device the process does not run: the file alone.
tc link add dev d1 || bad "link add d1"
tc qdisc add dev d1 root handle 1: pfifo limit 3 || bad "a device nobody runs"

kill "$bench_pid" 2>/dev/null
wait "$bench_pid" 2>/dev/null
bench_pid=
# Nobody serves it now: the file alone, exit 0.
tc qdisc change dev d0 root handle 2: bfifo limit 9000 2>"$tmp/err" || bad "file-only change: $(cat "$tmp/err")"
grep -q 'limit 9000$' "$conf" || bad "the file-only change was not written"

[ "$fail" -eq 0 ] && echo "tc_live: ok"
exit "$fail"
