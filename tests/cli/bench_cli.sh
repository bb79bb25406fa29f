#!/usr/bin/env bash
# `txpath bench` contract: bad input -> exactly one error line on stderr and exit 2;
# a small run -> exit 0 and a JSON file with the documented schema and a conservation that holds.
set -u
bin=${1:?usage: bench_cli.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit), bad
not_under thread "flag parsing and the JSON schema (single-threaded)"

bad nosuchcommand
bad bench --bogus
bad bench --threads 0
bad bench --threads x
bad bench --threads 1,,2
bad bench --threads 5000
bad bench --strategy nope
bad bench --strategy busylock,nope
bad bench --lock nope
bad bench --device nope
bad bench --device nic:ring=abc
bad bench --device nic:bogus=1
bad bench --duration -1
bad bench --duration abc
bad bench --qdisc "pfifo limit x"
bad bench --qdisc "nosuchqdisc"
bad bench --payload 5
bad bench --payload 9000 --device null
bad bench --json /nonexistent-dir/out.json
bad bench --csv /nonexistent-dir/out.csv
bad bench --plot /nonexistent-dir/out.svg
bad bench --repeat 0
bad bench --repeat x
bad bench --nodes 0
bad bench --nodes 4096
bad bench --pin --no-pin
bad bench --park maybe
bad bench --park on,on
bad bench --park on,
bad bench --park ""
bad bench --burst 0
bad bench --burst 1025
bad bench --burst x
bad bench --burst 0x10
bad bench --burst ""

# A small real run.
if ! "$bin" bench --strategy busylock,rootlock --threads 1,3 --duration 0.05 --device null \
     --repeat 2 --quiet --json "$tmp/out.json" --csv "$tmp/out.csv" --plot "$tmp/out.svg" \
     >"$tmp/stdout" 2>"$tmp/stderr"; then
  echo "FAIL: small bench run exited non-zero"; cat "$tmp/stdout" "$tmp/stderr"; fail=1
fi
if ! jq -e '
  (.config | has("strategies") and has("threads") and has("device") and has("lock")) and
  (.config.park == ["on"]) and
  (.topology | (.cores >= 1) and (.numa_nodes >= 1) and (.cpu_model | type == "string")) and
  (.results | length == 4) and
  (.results | map(.strategy) | sort == ["busylock","busylock","rootlock","rootlock"]) and
  (.results | all(.park == "on")) and
  (.results | all(has("strategy") and has("lock") and has("park") and has("threads") and has("mpps") and
                  has("mpps_min") and has("mpps_max") and has("cpu_ns_per_pkt") and
                  has("submitted") and has("sent") and has("dropped") and has("requeues") and
                  has("fairness") and has("batch_mean") and has("lock_waits") and
                  has("lock_wait_ns") and has("send_p50_ns") and has("send_p99_ns") and
                  has("vs_busylock_mpps") and has("vs_busylock_cpu"))) and
  (.results | all(.mpps_min <= .mpps and .mpps <= .mpps_max)) and
  (.results | map(select(.strategy == "busylock")) | all(.vs_busylock_mpps == 1)) and
  (.config.repeat == 2) and
  (.results | all(.submitted == .sent + .dropped and .sent > 0 and .mpps > 0))
' "$tmp/out.json" >/dev/null; then
  echo "FAIL: JSON schema/conservation check"; cat "$tmp/out.json"; fail=1
fi
grep -q "topology:" "$tmp/stdout" || { echo "FAIL: topology line missing"; fail=1; }
# CSV: the documented header and one row per point.
expected_header="strategy,lock,park,threads,queues,mpps,mpps_min,mpps_max,cpu_ns_per_pkt,submitted,sent,dropped,requeues,fairness,batch_mean,lock_waits,lock_wait_ns,send_p50_ns,send_p99_ns,vs_busylock_mpps,vs_busylock_cpu,vs_floor_cpu,conserved,vs_kernel_mpps,vs_kernel_cpu,sink_received,sink_lost,sink_duplicated,sink_out_of_order,sink_socket_drops,delivered,send_p90_ns,send_p999_ns,queue_p50_ns,queue_p90_ns,queue_p99_ns,queue_p999_ns,offered_mpps,flows,runs,complete,mpps_cv,cpu_cv,vs_busylock_mpps_ci95_lo,vs_busylock_mpps_ci95_hi,vs_busylock_cpu_ci95_lo,vs_busylock_cpu_ci95_hi,vs_floor_cpu_ci95_lo,vs_floor_cpu_ci95_hi,vs_kernel_mpps_ci95_lo,vs_kernel_mpps_ci95_hi,vs_kernel_cpu_ci95_lo,vs_kernel_cpu_ci95_hi,unstable,unstable_reason,noise_steal_pct,noise_other_cpu_pct,advised_repeat,limit_line_ns,limit_lock_ns,vs_limit,vs_dpdk_mpps,vs_dpdk_cpu,partial"
[ "$(head -1 "$tmp/out.csv")" = "$expected_header" ] || { echo "FAIL: CSV header: $(head -1 "$tmp/out.csv")"; fail=1; }
[ "$(wc -l < "$tmp/out.csv")" -eq 5 ] || { echo "FAIL: CSV rows"; cat "$tmp/out.csv"; fail=1; }
# SVG: an svg document with one series per strategy (well-formedness is unit-tested).
grep -q "<svg" "$tmp/out.svg" && grep -q "</svg>" "$tmp/out.svg" || { echo "FAIL: SVG"; fail=1; }
grep -q "busylock" "$tmp/out.svg" && grep -q "rootlock" "$tmp/out.svg" || { echo "FAIL: SVG legend"; fail=1; }
grep -q "^busylock" "$tmp/stdout" || { echo "FAIL: table row missing"; fail=1; }

# --park on,off: both policies, interleaved, each strategy measured under each; busylock's ratio
# is 1 within each policy.
if ! "$bin" bench --strategy busylock,rootlock --threads 2 --duration 0.05 --device null \
     --repeat 1 --park on,off --lock mcs --quiet --json "$tmp/park.json" --csv "$tmp/park.csv" \
     >"$tmp/park.stdout" 2>"$tmp/park.stderr"; then
  echo "FAIL: --park on,off run exited non-zero"; cat "$tmp/park.stdout" "$tmp/park.stderr"; fail=1
fi
if ! jq -e '
  (.config.park == ["on","off"]) and
  (.results | length == 4) and
  (.results | map([.strategy, .park]) ==
     [["busylock","on"],["rootlock","on"],["busylock","off"],["rootlock","off"]]) and
  (.results | map(select(.strategy == "busylock")) | all(.vs_busylock_mpps == 1)) and
  (.results | all(.submitted == .sent + .dropped and .sent > 0))
' "$tmp/park.json" >/dev/null; then
  echo "FAIL: --park on,off JSON"; cat "$tmp/park.json"; fail=1
fi
[ "$(cut -d, -f3 "$tmp/park.csv" | tr '\n' ' ')" = "park on on off off " ] ||
  { echo "FAIL: --park CSV column"; cat "$tmp/park.csv"; fail=1; }
grep -Eq "^rootlock +mcs +off " "$tmp/park.stdout" || { echo "FAIL: park column in table"; cat "$tmp/park.stdout"; fail=1; }

# The floor row: in the default list (first), named here; every row has vs_floor_cpu (the
# floor's own is 1), in the JSON, the CSV and the table's "vs floor" column.
if ! "$bin" bench --strategy floor,busylock --threads 1 --duration 0.05 --device nic --repeat 2 \
     --quiet --json "$tmp/floor.json" --csv "$tmp/floor.csv" >"$tmp/floor.stdout" 2>"$tmp/floor.stderr"; then
  echo "FAIL: floor run exited non-zero"; cat "$tmp/floor.stdout" "$tmp/floor.stderr"; fail=1
fi
if ! jq -e '
  (.config.burst == 1) and
  (.results | map(.strategy) == ["floor","busylock"]) and
  (.results | all(.vs_floor_cpu > 0 and .conserved and .submitted == .sent + .dropped and .sent > 0)) and
  (.results[0].vs_floor_cpu == 1 and .results[0].lock == "-")
' "$tmp/floor.json" >/dev/null; then
  echo "FAIL: floor row JSON"; cat "$tmp/floor.json"; fail=1
fi
col=$(head -1 "$tmp/floor.csv" | tr ',' '\n' | grep -nx vs_floor_cpu | cut -d: -f1)
[ -n "$col" ] && [ "$(sed -n 2p "$tmp/floor.csv" | cut -d, -f"$col")" = "1" ] ||
  { echo "FAIL: vs_floor_cpu CSV column"; cat "$tmp/floor.csv"; fail=1; }
grep -q "vs floor" "$tmp/floor.stdout" && grep -Eq "^floor +- " "$tmp/floor.stdout" ||
  { echo "FAIL: floor row or vs floor column in the table"; cat "$tmp/floor.stdout"; fail=1; }
"$bin" bench --help | grep -q -- "--burst" || { echo "FAIL: --burst not in the help"; fail=1; }

# --burst 32: every strategy and the floor run, each conserving, then the limit row (at 2 pinned
# threads it is in the default set); burst recorded and printed.
if ! "$bin" bench --threads 2 --duration 0.02 --device null --repeat 1 --burst 32 --quiet \
     --json "$tmp/burst.json" >"$tmp/burst.stdout" 2>"$tmp/burst.stderr"; then
  echo "FAIL: --burst 32 run exited non-zero"; cat "$tmp/burst.stdout" "$tmp/burst.stderr"; fail=1
fi
if ! jq -e '
  (.config.strategies | length) as $n |
  (.config.burst == 32) and (.results | length == $n) and
  (.results[0].strategy == "floor") and (.results[-1].strategy == "limit") and
  (.results[-1].limit_line_ns > 0 and .results[-1].vs_limit == 1) and
  (.results[:-1] | all(.conserved and .submitted == .sent + .dropped and .sent > 0 and .vs_limit > 0))
' "$tmp/burst.json" >/dev/null; then
  echo "FAIL: --burst 32 JSON"; cat "$tmp/burst.json"; fail=1
fi
grep -q "burst 32" "$tmp/burst.stdout" || { echo "FAIL: burst not printed"; cat "$tmp/burst.stdout"; fail=1; }

# nolock with a tc file (issue 31, class 1): nolock runs the fifo root's lockless twin; the run,
# its final tc statistics and the worker survive it (they read the freed root: SIGSEGV).
"$bin" tc --config "$tmp/nolock.tc" link add dev eth0 || { echo "FAIL: nolock tc file setup"; fail=1; }
for kind in pfifo bfifo pfifo_fast; do
  "$bin" tc --config "$tmp/nolock.tc" qdisc del dev eth0 root 2>/dev/null  # none the first time
  "$bin" tc --config "$tmp/nolock.tc" qdisc add dev eth0 root handle 1: "$kind"
  if ! "$bin" bench --tc-config "$tmp/nolock.tc" --device null --strategy nolock --threads 1 \
       --duration 0.02 --repeat 1 --quiet --json "$tmp/nolock.json" >"$tmp/nolock.out" 2>&1; then
    echo "FAIL: nolock with a $kind tc file exited non-zero"; cat "$tmp/nolock.out"; fail=1
  elif ! jq -e --arg k "$kind" '.results[] | select(.strategy == "nolock") | .conserved and
         (.tc.qdiscs | length == 1) and .tc.qdiscs[0].kind == $k and .tc.qdiscs[0].packets == .sent' \
         "$tmp/nolock.json" >/dev/null; then
    echo "FAIL: nolock with a $kind tc file: JSON"; cat "$tmp/nolock.json"; fail=1
  fi
done

[ "$fail" -eq 0 ] && echo "bench_cli: all checks passed"
exit "$fail"
