#!/usr/bin/env bash
# The command line explains itself: `txpath --help` lists every command (tc too); `txpath` alone
# prints that usage on stderr and exits 2; `bench --help` lists every device kind the library
# builds (the list `--device` errors name); `testbed --help` shows the options of up, down, show.
set -u
bin=${1:?usage: help.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"

commands="bench tc testbed sink exporter offer"

# --help: exit 0, every command on a line of its own.
out=$("$bin" --help 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: txpath --help -> exit $rc"; fail=1; }
for c in $commands; do
  grep -qE "^  $c +[^ ]" <<<"$out" || { echo "FAIL: txpath --help does not list $c:"; echo "$out"; fail=1; }
done

# No command: the same usage on stderr, nothing on stdout, exit 2.
"$bin" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: txpath alone -> exit $rc, expected 2"; fail=1; }
[ -s "$tmp/out" ] && { echo "FAIL: txpath alone wrote to stdout"; fail=1; }
grep -q '^Usage: ' "$tmp/err" || { echo "FAIL: txpath alone prints no usage:"; cat "$tmp/err"; fail=1; }
for c in $commands; do
  grep -qE "^  $c +[^ ]" "$tmp/err" || { echo "FAIL: txpath alone does not list $c"; fail=1; }
done

# bench --help: every kind make_device knows (as its error for an unknown kind names them), each
# at the start of a line of --device's description, and the kinds the issue named among them.
known=$("$bin" bench --device nosuchkind --threads 1 2>&1 | sed -n 's/.*(known: \(.*\))$/\1/p' | tr -d ,)
[ -n "$known" ] || { echo "FAIL: no list of device kinds in the error for an unknown kind"; fail=1; }
for k in afpacket afxdp udp tun pcap fault null nic; do
  grep -qw "$k" <<<"$known" || { echo "FAIL: $k is not among the known device kinds: $known"; fail=1; }
done
out=$("$bin" bench --help 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: txpath bench --help -> exit $rc"; fail=1; }
for k in $known; do
  grep -qE "^ +$k([:[ ]|$)" <<<"$out" || { echo "FAIL: bench --help does not list device kind $k:"; echo "$out"; fail=1; }
done

# testbed --help: the options of its subcommands, without asking each one.
out=$("$bin" testbed --help 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: txpath testbed --help -> exit $rc"; fail=1; }
for o in --host-if --peer-if --netns --host-addr --peer-addr --qdisc --mtu; do
  grep -qE "^ +$o " <<<"$out" || { echo "FAIL: testbed --help does not show $o:"; echo "$out"; fail=1; }
done
for s in up down show; do
  grep -qE "^ *$s( |$)" <<<"$out" || { echo "FAIL: testbed --help does not show $s"; fail=1; }
done

[ "$fail" -eq 0 ] && echo "help: ok"
exit "$fail"
