#!/usr/bin/env bash
# `txpath bench`'s table: 120 columns by default, every column with --wide, rows printed as each
# thread count finishes; --interval lines (bad values: one error line, exit 2); the ETA on the
# progress lines of a bench planned to take a few seconds or more.
set -u
bin=${1:?usage: bench_table.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit), bad
# The table's text and layout: the runs behind it are checked sanitized by the other tests.
release_only "the bench table's text"

bad bench --interval 0
bad bench --interval -1
bad bench --interval abc
bad bench --interval nan
bad bench --interval inf
bad bench --interval 0x10
bad bench --interval ""
bad bench --interval 5000

# The default strategies (the widest names) at two thread counts: every line fits 120 columns.
if ! "$bin" bench --device null --threads 1,2 --duration 0.01 --repeat 1 >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: the default table run exited non-zero"; cat "$tmp/out" "$tmp/err"; fail=1
fi
long=$(grep -v '^topology: \|^config: ' "$tmp/out" | awk 'length($0) > 120')  # the table, its notes, legend
[ -z "$long" ] || { echo "FAIL: lines over 120 columns:"; echo "$long"; fail=1; }
for h in 'Mpps' 'ns/pkt' 'vs busylock' 'vs floor' 'drop%' 'p99 us' 'check'; do
  grep -qF -- "$h" "$tmp/out" || { echo "FAIL: header $h missing"; cat "$tmp/out"; fail=1; }
done
grep -Eq '^sharded +ticket +on +2 .* (ok|FAIL)$' "$tmp/out" || { echo "FAIL: short check cell"; cat "$tmp/out"; fail=1; }
grep -Eq '^limit +tas +on +2 .* -$' "$tmp/out" || { echo "FAIL: the limit row's check cell"; cat "$tmp/out"; fail=1; }
grep -q 'min..max\|p50 us\|ok: ' "$tmp/out" && { echo "FAIL: a --wide column without --wide"; fail=1; }
[ "$(grep -c '^strategy ' "$tmp/out")" -eq 1 ] || { echo "FAIL: not one header"; cat "$tmp/out"; fail=1; }

# --wide: every column and the full check text.
"$bin" bench --device null --strategy busylock --threads 1 --duration 0.01 --repeat 1 --quiet --wide >"$tmp/wide" 2>&1 ||
  { echo "FAIL: --wide run"; cat "$tmp/wide"; fail=1; }
for h in 'min..max' 'CV%' 'Mpps CI95' 'fair' 'batch' 'waits/k' 'p50 us' 'p99 us' 'requeues'; do
  grep -qF -- "$h" "$tmp/wide" || { echo "FAIL: --wide header $h missing"; cat "$tmp/wide"; fail=1; }
done
grep -Eq '^busylock .* ok: ([0-9]+) = \1 sent \+ 0 dropped$' "$tmp/wide" || { echo "FAIL: --wide check text"; cat "$tmp/wide"; fail=1; }

# Rows print as each thread count finishes: threads=1's rows come before threads=2's runs start.
"$bin" bench --device null --strategy busylock --threads 1,2 --duration 0.01 --repeat 1 >"$tmp/both" 2>&1 ||
  { echo "FAIL: rows-as-they-finish run"; cat "$tmp/both"; fail=1; }
row=$(grep -nE '^busylock +ticket +on +1 ' "$tmp/both" | head -1 | cut -d: -f1)
next=$(grep -n 'busylock threads=2' "$tmp/both" | head -1 | cut -d: -f1)
[ -n "$row" ] && [ -n "$next" ] && [ "$row" -lt "$next" ] ||
  { echo "FAIL: threads=1's row not printed before threads=2 ran"; cat "$tmp/both"; fail=1; }

# --interval: a line per slice of each run's window, on stderr, even with --quiet.
"$bin" bench --device null --strategy busylock,rootlock --threads 1 --duration 0.06 --repeat 2 --quiet \
  --interval 0.02 >"$tmp/iout" 2>"$tmp/ierr" || { echo "FAIL: --interval run"; cat "$tmp/iout" "$tmp/ierr"; fail=1; }
n=$(grep -cE '^txpath bench: \[(busylock|rootlock) threads=1 park=on round [12]\] [0-9.]+-[0-9.]+ s  [0-9.]+ Mpps  dropped [0-9]+ \([0-9.]+%\)$' "$tmp/ierr")
[ "$n" -eq 12 ] || { echo "FAIL: $n interval lines, not 2 rows x 2 rounds x 3"; cat "$tmp/ierr"; fail=1; }
grep -q '^txpath bench: \[busylock threads=1 park=on round 1\] 0.00-0.0' "$tmp/ierr" ||
  { echo "FAIL: the first slice does not start at 0"; cat "$tmp/ierr"; fail=1; }
grep -q '^busylock ' "$tmp/iout" && ! grep -q 'Mpps  dropped' "$tmp/iout" || { echo "FAIL: interval lines on stdout"; fail=1; }

# ETA: a bench planned for >= 3 s (2 x 5 runs of 0.33 s) shows it; a short one does not.
"$bin" bench --device null --strategy floor,busylock --threads 1 --duration 0.3 --repeat 5 >/dev/null 2>"$tmp/eta" ||
  { echo "FAIL: ETA run"; cat "$tmp/eta"; fail=1; }
[ "$(grep -cE '^txpath bench: \[[0-9]+/10\] (floor|busylock) threads=1 park=on round [1-5] ETA [0-9]+:[0-5][0-9]$' "$tmp/eta")" -eq 10 ] ||
  { echo "FAIL: progress lines without an ETA"; cat "$tmp/eta"; fail=1; }
grep -q 'ETA' "$tmp/err" && { echo "FAIL: an ETA on a short bench"; cat "$tmp/err"; fail=1; }

[ "$fail" -eq 0 ] && echo "bench_table: all checks passed"
exit "$fail"
