#!/usr/bin/env bash
# scripts/tdc_run.py without a case directory says where the kernel's tdc cases come from (a
# Linux source tree's tools/testing/selftests/tc-testing/tc-tests/qdiscs, or $TXPATH_TDC_DIR) and
# exits 2; a directory that does not exist says so, exit 2; $TXPATH_TDC_DIR is read when
# --tdc-dir is not given. Runs no kernel case (tdc.sh does): the case file here is empty.
set -u
bin=${1:?usage: tdc_usage.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/tdc_run.py
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 is not installed"
  [ -n "${CI:-}" ] && exit 1
  exit 0
fi
where='tools/testing/selftests/tc-testing/tc-tests/qdiscs'

env -u TXPATH_TDC_DIR python3 "$script" --txpath "$bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: no case directory -> exit $rc, expected 2"; fail=1; }
[ "$(grep -c '' "$tmp/err")" -eq 1 ] || { echo "FAIL: no case directory: not one line:"; cat "$tmp/err"; fail=1; }
for word in "$where" TXPATH_TDC_DIR --tdc-dir; do
  grep -qF -- "$word" "$tmp/err" || { echo "FAIL: no case directory: $word not named:"; cat "$tmp/err"; fail=1; }
done

TXPATH_TDC_DIR="$tmp/none" python3 "$script" --txpath "$bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: missing case directory -> exit $rc, expected 2"; fail=1; }
grep -qF "$tmp/none" "$tmp/err" && grep -qF "$where" "$tmp/err" ||
  { echo "FAIL: missing case directory: not named, or not where cases come from:"; cat "$tmp/err"; fail=1; }

mkdir "$tmp/cases" && echo '[]' >"$tmp/cases/fifo.json"
TXPATH_TDC_DIR="$tmp/cases" python3 "$script" --txpath "$bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] && grep -q '^fifo.json ' "$tmp/out" ||
  { echo "FAIL: TXPATH_TDC_DIR not read (exit $rc):"; cat "$tmp/out" "$tmp/err"; fail=1; }

[ "$fail" -eq 0 ] && echo "tdc_usage: ok"
exit "$fail"
