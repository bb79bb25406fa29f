#!/usr/bin/env bash
# `txpath bench` contract: bad input -> exactly one error line on stderr and exit 2;
# a small run -> exit 0 and a JSON file with the documented schema and a conservation that holds.
set -u
bin=${1:?usage: bench_cli.sh PATH_TO_TXPATH}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bad() {
  local err rc lines
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ]; then
    echo "FAIL: txpath $* -> exit $rc, $lines stderr line(s): $err"
    fail=1
  fi
}

bad
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

# A small real run.
if ! "$bin" bench --strategy busylock,rootlock --threads 1,3 --duration 0.05 --device null \
     --quiet --json "$tmp/out.json" >"$tmp/stdout" 2>"$tmp/stderr"; then
  echo "FAIL: small bench run exited non-zero"; cat "$tmp/stdout" "$tmp/stderr"; fail=1
fi
if ! jq -e '
  (.config | has("strategies") and has("threads") and has("device") and has("lock")) and
  (.topology | (.cores >= 1) and (.numa_nodes >= 1) and (.cpu_model | type == "string")) and
  (.results | length == 4) and
  (.results | map(.strategy) | sort == ["busylock","busylock","rootlock","rootlock"]) and
  (.results | all(has("strategy") and has("lock") and has("threads") and has("mpps") and
                  has("submitted") and has("sent") and has("dropped") and has("requeues") and
                  has("cpu_ns_per_pkt"))) and
  (.results | all(.submitted == .sent + .dropped and .sent > 0 and .mpps > 0))
' "$tmp/out.json" >/dev/null; then
  echo "FAIL: JSON schema/conservation check"; cat "$tmp/out.json"; fail=1
fi
grep -q "topology:" "$tmp/stdout" || { echo "FAIL: topology line missing"; fail=1; }
grep -q "^busylock" "$tmp/stdout" || { echo "FAIL: table row missing"; fail=1; }

[ "$fail" -eq 0 ] && echo "bench_cli: all checks passed"
exit "$fail"
