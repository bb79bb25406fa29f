#!/usr/bin/env bash
# Live tc changes across a bench's rounds (issue 31, class 3), each round in its own worker:
#  1. the tree a round runs is the file's: a change that lands while a worker reads the file and
#     opens its control endpoint reaches one of the two, so after every change the running tree
#     (tc -s, whenever a round serves it) has what the file has;
#  2. a file that no longer builds between rounds (`link del`) fails the next round, but the
#     rounds that ran are kept: their table row and --json (marked partial), one line naming the
#     failed round, exit 1;
#  3. with file and process apart (the file edited by hand while a round runs), the JSON's final
#     tc section labels the running tree's counters with the running tree's kinds.
set -u
conf_name=rounds.tc
. "$(dirname "$0")/lib/live.bash" "$@"  # bin, tmp, bench_pid (killed on exit), fail, conf, tc, bad
# Waits (at most 30 s) until a round of the bench serves the configuration.
wait_served() {
  for _ in $(seq 300); do
    tc -s qdisc show dev d0 >/dev/null 2>"$tmp/served.err"
    [ -s "$tmp/served.err" ] || return 0
    kill -0 "$bench_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

tc link add dev d0 || bad "link add"
tc qdisc add dev d0 root handle 1: pfifo limit 1000 || bad "qdisc add"

# ---- 1. every change reaches the file and the tree a round runs --------------------------------
# Rounds of 0.05 s, as many as it takes for 40 checks (at most 90 s: a loaded machine runs
# fewer), then stopped with SIGTERM (a background job ignores SIGINT).
"$bin" bench --tc-config "$conf" --strategy busylock --device null --threads 1 --repeat 1000 \
  --duration 0.05 >"$tmp/agree.out" 2>&1 &
bench_pid=$!
wait_served || bad "the bench never served its counters"
limit=100 checks=0 mismatches=0 failed=0
SECONDS=0
while kill -0 "$bench_pid" 2>/dev/null && [ "$checks" -lt 40 ] && [ "$SECONDS" -lt 90 ]; do
  limit=$((limit + 1))
  if ! tc qdisc change dev d0 root handle 1: pfifo limit "$limit" 2>"$tmp/change.err"; then
    failed=$((failed + 1))
    echo "change to limit $limit: $(cat "$tmp/change.err")"
    limit=$(grep -o 'limit [0-9]*' "$conf" | awk '{print $2}')  # what the file still says
    continue
  fi
  tc -s qdisc show dev d0 >"$tmp/show" 2>"$tmp/show.err"
  [ -s "$tmp/show.err" ] && continue  # between rounds: nothing runs
  checks=$((checks + 1))
  head -1 "$tmp/show" | grep -q "limit ${limit}p" || {
    mismatches=$((mismatches + 1))
    echo "the file says limit $limit, the running tree: $(head -1 "$tmp/show")"
  }
done
kill -TERM "$bench_pid" 2>/dev/null
wait "$bench_pid"
status=$?
bench_pid=
[ "$status" -eq 143 ] || bad "the bench exited $status, not 143 (SIGTERM): $(tail -3 "$tmp/agree.out")"
[ "$failed" -eq 0 ] || bad "$failed changes failed"
[ "$checks" -ge 10 ] || bad "only $checks checks ran"
[ "$mismatches" -eq 0 ] || bad "$mismatches of $checks checks found the running tree apart from the file"

# ---- 2. a round that fails after others ran keeps them ------------------------------------------
tc qdisc replace dev d0 root handle 1: pfifo limit 1000 || bad "replace"
"$bin" bench --tc-config "$conf" --strategy busylock --device null --threads 1 --repeat 100 \
  --duration 0.05 --json "$tmp/failed.json" >"$tmp/failed.out" 2>"$tmp/failed.err" &
bench_pid=$!
wait_served || bad "the bench never served its counters"
# A running round refuses to lose its device; between two rounds the file alone changes.
for _ in $(seq 3000); do
  tc link del dev d0 2>/dev/null && break
  sleep 0.01
done
wait "$bench_pid"
status=$?
bench_pid=
[ "$status" -eq 1 ] || bad "a failed later round: exit $status, not 1: $(cat "$tmp/failed.err")"
grep -q "^txpath: error: round [0-9]* at 1 thread(s) failed: .*the rows above are the rounds that ran" "$tmp/failed.err" ||
  bad "no line names the failed round: $(cat "$tmp/failed.err")"
grep -q "^busylock " "$tmp/failed.out" || bad "the rounds that ran are not in the table: $(cat "$tmp/failed.out")"
jq -e '.partial == true and (.results | length == 1) and .results[0].runs >= 1' "$tmp/failed.json" >/dev/null ||
  bad "--json of the rounds that ran: $(cat "$tmp/failed.json" 2>&1 | head -c 300)"

# ---- 3. the final tc section is the running tree's ----------------------------------------------
rm -f "$conf"
tc link add dev d0 || bad "link add"
tc qdisc add dev d0 root handle 1: pfifo limit 1000 || bad "qdisc add"
"$bin" tc --config "$tmp/other.tc" link add dev d0 || bad "other link add"
"$bin" tc --config "$tmp/other.tc" qdisc add dev d0 root handle 1: bfifo || bad "other qdisc add"
"$bin" bench --tc-config "$conf" --strategy busylock --device null --threads 1 --repeat 1 \
  --duration 2 --json "$tmp/final.json" >"$tmp/final.out" 2>&1 &
bench_pid=$!
wait_served || bad "the bench never served its counters"
cat "$tmp/other.tc" >"$conf"  # by hand, behind txpath tc's back: the process runs pfifo still
wait "$bench_pid" || bad "the bench exited $?: $(tail -3 "$tmp/final.out")"
bench_pid=
jq -e '.results[0].tc.qdiscs[0].kind == "pfifo" and .results[0].tc.qdiscs[0].packets > 0' "$tmp/final.json" >/dev/null ||
  bad "the final tc section is not the running tree's: $(jq -c '.results[0].tc' "$tmp/final.json" 2>&1 | head -c 300)"

[ "$fail" -eq 0 ] && echo "tc_live_rounds: ok"
exit "$fail"
