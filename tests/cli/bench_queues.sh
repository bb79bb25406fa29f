#!/usr/bin/env bash
# `txpath bench --queues LIST` and `--xps` (issue 14): bad lists and maps -> one error line, exit 2;
# a run on 1 and 2 TX queues -> exit 0, a JSON file whose points carry `queues` and a `per_queue`
# array that conserves and sums to the point's totals, and a CSV with the `queues` column.
set -u
bin=${1:?usage: bench_queues.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit), bad

bad bench --device null --queues 0
bad bench --device null --queues x
bad bench --device null --queues 1,,2
bad bench --device null --queues 1,1
bad bench --device null --queues 5000
bad bench --device null --queues ""
bad bench --device nic:queues=2 --queues 1,2
bad bench --device nic:queues=2 --queues 4
bad bench --device "pcap:$tmp/never.pcap" --queues 2
bad bench --device null --queues 2 --xps bogus
bad bench --device null --queues 2 --xps 0:
bad bench --device null --queues 2 --xps 0:1,0:0
bad bench --device null --queues 2 --xps 0:5
bad bench --device null --queues 2 --xps 4095:0
bad bench --device null --queues 2 --xps "$(printf '0:\033[2J')"
[ -e "$tmp/never.pcap" ] && { echo "FAIL: a refused pcap spec created its file"; fail=1; }

if ! "$bin" bench --device null --strategy busylock --queues 1,2 --threads 2 --duration 0.05 \
     --repeat 1 --quiet --json "$tmp/q.json" --csv "$tmp/q.csv" >"$tmp/stdout" 2>"$tmp/stderr"; then
  echo "FAIL: bench --queues 1,2 exited non-zero"; cat "$tmp/stdout" "$tmp/stderr"; fail=1
fi
if ! jq -e '
  (.config.queues == [1,2]) and (.config.xps == "auto") and
  (.results | length == 2) and
  (.results | map(.queues) == [1,2]) and
  (.results | all(.conserved and .submitted == .sent + .dropped and .sent > 0)) and
  (.results | all(.per_queue | type == "array")) and
  (.results | all(.queues == (.per_queue | length))) and
  (.results | all(.per_queue | map(.queue) == [range(0; length)])) and
  (.results | all(.per_queue | all(has("sent") and has("dropped") and has("batch") and
                                   has("submitted") and has("doorbells") and .conserved and
                                   .submitted == .sent + .dropped))) and
  (.results | all(.sent == (.per_queue | map(.sent) | add) and
                  .dropped == (.per_queue | map(.dropped) | add) and
                  .submitted == (.per_queue | map(.submitted) | add))) and
  (.results | all(.vs_busylock_mpps == 1))
' "$tmp/q.json" >/dev/null; then
  echo "FAIL: --queues JSON"; cat "$tmp/q.json"; fail=1
fi
[ "$(cut -d, -f5 "$tmp/q.csv" | tr '\n' ' ')" = "queues 1 2 " ] ||
  { echo "FAIL: --queues CSV column"; cat "$tmp/q.csv"; fail=1; }
grep -Eq "^busylock +ticket +on +2 +2 " "$tmp/stdout" || { echo "FAIL: txq column in table"; cat "$tmp/stdout"; fail=1; }
grep -q "^Per TX queue" "$tmp/stdout" || { echo "FAIL: per-queue table missing"; cat "$tmp/stdout"; fail=1; }

# The default: one TX queue, no txq column, queues 1 in JSON.
if ! "$bin" bench --device null --strategy busylock --threads 1 --duration 0.02 --repeat 1 --quiet \
     --json "$tmp/one.json" >"$tmp/one.stdout" 2>&1; then
  echo "FAIL: default bench exited non-zero"; cat "$tmp/one.stdout"; fail=1
fi
jq -e '(.config.queues == [1]) and (.results[0].queues == 1) and (.results[0].per_queue | length == 1)' \
  "$tmp/one.json" >/dev/null || { echo "FAIL: default JSON queues"; cat "$tmp/one.json"; fail=1; }
grep -q "txq" "$tmp/one.stdout" && { echo "FAIL: txq column without --queues"; fail=1; }

# --xps off and an explicit map run and conserve; a spec naming queues=N runs on N queues.
for args in "--device null --queues 2 --xps off" "--device null --queues 2 --xps 0:1" \
            "--device nic:queues=2"; do
  # shellcheck disable=SC2086
  if ! "$bin" bench $args --strategy busylock --threads 2 --duration 0.02 --repeat 1 --quiet \
       --json "$tmp/x.json" >"$tmp/x.stdout" 2>&1; then
    echo "FAIL: bench $args exited non-zero"; cat "$tmp/x.stdout"; fail=1
    continue
  fi
  jq -e '(.results | length == 1) and (.results[0].queues == 2) and .results[0].conserved and
         (.results[0].per_queue | all(.conserved))' "$tmp/x.json" >/dev/null ||
    { echo "FAIL: bench $args JSON"; cat "$tmp/x.json"; fail=1; }
done

[ "$fail" -eq 0 ] && echo "bench_queues: all checks passed"
exit "$fail"
