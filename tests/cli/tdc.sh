#!/usr/bin/env bash
# The kernel's own tc-testing (tdc) qdisc cases against `txpath tc` (scripts/tdc_run.py): every
# file of a qdisc txpath implements must pass at least 90% of its configuration-only cases.
# The cases are read at run time from $TXPATH_TDC_DIR, else ../shared/tdc/qdiscs beside the
# checkout; with neither of them (or no python3) it prints SKIP.
set -u
bin=$(realpath "${1:?usage: tdc.sh PATH_TO_TXPATH}")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# Text and status checks of one tc process at a time, on the release build only: under the
# sanitizers they took 1-2.5 minutes of the CI's 30, and the fuzzers (fuzz_tc_config,
# fuzz_qdisc_spec) run the same parsers under ASan+UBSan.
if "$bin" --version 2>/dev/null | grep -q 'sanitizer'; then
  echo "SKIP: the tdc cases run on the release build only"
  exit 0
fi
dir=""
for d in "${TXPATH_TDC_DIR:-}" "$root/../shared/tdc/qdiscs"; do
  if [ -n "$d" ] && [ -d "$d" ]; then dir=$d; break; fi
done
if [ -z "$dir" ]; then
  echo "SKIP: no tdc case directory (set TXPATH_TDC_DIR)"
  exit 0
fi
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 is not installed"
  [ -n "${CI:-}" ] && exit 1
  exit 0
fi
exec python3 "$root/scripts/tdc_run.py" --txpath "$bin" --tdc-dir "$dir" --min-pass 0.9
