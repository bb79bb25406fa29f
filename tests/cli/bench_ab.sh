#!/usr/bin/env bash
# scripts/bench_ab.py: two binaries (here the same one twice) run in ABBA order, one row per
# strategy and thread count with both sides' medians, ranges and B/A; bad arguments exit 2 with
# the usage line; a bench that fails exits 1 and names its log.
set -u
bin=${1:?usage: bench_ab.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit)
release_only "the A/B script"
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/bench_ab.py"

python3 "$script" "$bin" "$bin" "$tmp/ab" 2 -- --device null --strategy floor,busylock --threads 1 \
  --duration 0.02 --repeat 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc"; cat "$tmp/err"; fail=1; }
for row in floor busylock; do
  grep -Eq "^$row +1 +[0-9.]+ \[ *[0-9.]+- *[0-9.]+\] +[0-9.]+ \[ *[0-9.]+- *[0-9.]+\] +[0-9.]+ " "$tmp/out" ||
    { echo "FAIL: no $row row"; cat "$tmp/out"; fail=1; }
done
[ "$(ls "$tmp/ab"/*.json | wc -l)" -eq 4 ] || { echo "FAIL: not 4 runs (ABBA)"; ls "$tmp/ab"; fail=1; }
[ "$(ls "$tmp/ab"/A-*.json | wc -l)" -eq 2 ] || { echo "FAIL: not 2 A runs"; fail=1; }

python3 "$script" "$bin" "$bin" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "^usage: bench_ab.py" "$tmp/err" || { echo "FAIL: missing args not exit 2"; fail=1; }
python3 "$script" "$bin" "$bin" "$tmp/ab2" 1 -- --device no_such_kind >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "exited" "$tmp/err" || { echo "FAIL: a failed bench not exit 1"; cat "$tmp/err"; fail=1; }
exit "${fail:-0}"
