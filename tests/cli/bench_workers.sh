#!/usr/bin/env bash
# `txpath bench` rounds in worker processes (the default) or in one process (--in-process):
#  - each round runs in a child process (`txpath ... --worker THREADS:ROUND`), whose rows come back
#    to the parent's table and JSON ("rounds_in": "worker processes");
#  - --seed N gives the same order of rows, in workers and in one process; the seed is printed and
#    recorded in the JSON;
#  - a worker killed mid-round: one error line naming the round and the signal, exit 1, no worker
#    left; --worker with a bad value or run by hand (no pipe on fd 3): one error line, exit 2;
#  - SIGINT to the parent reaches the worker: the rows that ran are printed, exit 130, no worker left.
set -u
bin=${1:?usage: bench_workers.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit), bad
FAIL() { echo "FAIL: $*"; fail=1; }
bg=""
trap '[ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null; common_cleanup' EXIT

# Sets child to the background bench's ($bg) worker once FILE has a line matching PATTERN
# (at most 10 s; child empty if there is none).
wait_for_worker() {
  child=""
  for _ in $(seq 200); do
    child=$(cat /proc/"$bg"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -m1 .)
    [ -n "$child" ] && grep -q "$1" "$2" && return
    sleep 0.05
  done
}

quick=(bench --device null --strategy busylock,rootlock,mutex --threads 1,2 --duration 0.02 --repeat 2)

# ---- 1: workers, and their rows in the parent's outputs ---------------------------------------
"$bin" "${quick[@]}" --quiet --json "$tmp/w.json" >"$tmp/w.out" 2>"$tmp/w.err" ||
  { FAIL "worker run exited non-zero"; cat "$tmp/w.out" "$tmp/w.err"; }
jq -e '.config.rounds_in == "worker processes" and (.config.seed | type == "number") and
       (.results | length == 6) and (.results | all(.runs == 2 and .conserved))' "$tmp/w.json" >/dev/null ||
  { FAIL "worker run: JSON"; cat "$tmp/w.json"; }
grep -q '^rounds: each in a fresh process, rows in random order (--seed [0-9]*)$' "$tmp/w.out" ||
  FAIL "worker run: no rounds line: $(head -3 "$tmp/w.out")"
"$bin" "${quick[@]}" --quiet --in-process --json "$tmp/p.json" >"$tmp/p.out" 2>"$tmp/p.err" ||
  FAIL "--in-process exited non-zero: $(cat "$tmp/p.err")"
jq -e '.config.rounds_in == "one process" and (.results | length == 6)' "$tmp/p.json" >/dev/null ||
  FAIL "--in-process: JSON"

# A worker is a child of the bench with --worker on its command line: seen while a long round runs.
"$bin" bench --device null --strategy busylock --threads 1 --duration 30 --repeat 1 >"$tmp/k.out" 2>"$tmp/k.err" &
bg=$!
wait_for_worker 'busylock threads=1' "$tmp/k.err"
[ -n "$child" ] && tr '\0' ' ' </proc/"$child"/cmdline | grep -q -- '--worker 1:0' ||
  FAIL "no worker process with --worker 1:0 under the bench (child: ${child:-none})"

# ---- 2: a worker killed mid-round ---------------------------------------------------------------
[ -n "$child" ] && kill -KILL "$child"
for _ in $(seq 200); do kill -0 "$bg" 2>/dev/null || break; sleep 0.05; done
wait "$bg"
rc=$?
bg=""
errs=$(grep -c '^txpath: error' "$tmp/k.err")
[ "$rc" -eq 1 ] && [ "$errs" -eq 1 ] &&
  grep -qx 'txpath: error: bench worker (threads 1, round 1): killed by signal 9 (SIGKILL)' "$tmp/k.err" ||
  { FAIL "killed worker: exit $rc, $errs error line(s)"; cat "$tmp/k.err"; }

out=$(bad bench --device null --strategy busylock --threads 1 --worker 1:0 3>&-)
[ "$out" = "txpath: error: --worker: file descriptor 3 is not a pipe (--worker is for txpath bench's own use)" ] ||
  FAIL "--worker without the parent's pipe: $out"
out=$(bad bench --device null --worker nonsense)
[ "$out" = 'txpath: error: --worker: "nonsense" is not THREADS:ROUND' ] || FAIL "--worker nonsense: $out"
out=$(bad bench --device null --strategy busylock --threads 1 --worker 7:0 3> >(cat >/dev/null))
[ "$out" = 'txpath: error: round 1 at 7 threads is not in the configuration' ] || FAIL "--worker 7:0: $out"

# ---- 3: --seed gives the order ------------------------------------------------------------------
order() {  # the progress lines of a run with seed $1 and extra flags
  "$bin" "${quick[@]}" --seed "$1" "${@:2}" 2>&1 >/dev/null | grep '^txpath bench: \['
}
a=$(order 42)
[ "$(grep -c . <<<"$a")" -eq 12 ] || FAIL "--seed 42: $(grep -c . <<<"$a") progress lines, not 12: $a"
[ "$a" = "$(order 42)" ] || FAIL "--seed 42 twice: different orders"
[ "$a" = "$(order 42 --in-process)" ] || FAIL "--seed 42: workers and --in-process ran different orders"
[ "$a" != "$(order 43)" ] || FAIL "--seed 43 ran the order of --seed 42"
"$bin" "${quick[@]}" --quiet --seed 42 --seed 44 --json "$tmp/s.json" >/dev/null 2>&1 &&
  jq -e '.config.seed == 44' "$tmp/s.json" >/dev/null || FAIL "--seed: the last one given is not the one used"

# ---- 4: SIGINT reaches the worker ---------------------------------------------------------------
env --default-signal=INT "$bin" bench --device null --strategy busylock,rootlock --threads 1 --duration 30 \
  --repeat 2 --json "$tmp/i.json" >"$tmp/i.out" 2>"$tmp/i.err" &
bg=$!
wait_for_worker '^txpath bench: \[1/' "$tmp/i.err"
kill -INT "$bg"
for _ in $(seq 200); do kill -0 "$bg" 2>/dev/null || break; sleep 0.05; done
wait "$bg"
rc=$?
bg=""
[ "$rc" -eq 130 ] || { FAIL "SIGINT: exit $rc, not 130"; cat "$tmp/i.err"; }
grep -Eq '^(busylock|rootlock) ' "$tmp/i.out" || FAIL "SIGINT: the row that ran was not printed"
jq -e '.partial == true and (.results | length == 1) and (.results[0].complete == false) and
       .results[0].conserved' "$tmp/i.json" >/dev/null 2>&1 || { FAIL "SIGINT: JSON"; cat "$tmp/i.json"; }
[ -n "$child" ] && kill -0 "$child" 2>/dev/null && FAIL "SIGINT: worker $child left behind"

[ "$fail" -eq 0 ] && echo "bench_workers: all checks passed"
exit "$fail"
