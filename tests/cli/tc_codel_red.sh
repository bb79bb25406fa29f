#!/usr/bin/env bash
# `txpath tc` with the codel and red qdiscs: the text, -s xstats and -j keys tc prints for them,
# change keeping codel's other options, and the exit statuses of their errors (1: tc refuses the
# options, 2: the kernel refuses the request), each with one stderr line.
set -u
bin=$(realpath "${1:?usage: tc_codel_red.sh PATH_TO_TXPATH}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
conf="$tmp/txpath.tc"
tc() { "$bin" tc --config "$conf" "$@"; }

expect() {  # expect STATUS ARGS...: exit status STATUS; if non-zero, exactly one stderr line
  local want=$1 err rc lines
  shift
  err=$(tc "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [ "$rc" -ne "$want" ] || { [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; }; then
    echo "FAIL: tc $* -> exit $rc (want $want), stderr: $err"
    fail=1
  fi
}
same() {  # same WHAT GOT WANT
  if [ "$2" != "$3" ]; then
    printf 'FAIL: %s\n got: %s\nwant: %s\n' "$1" "$2" "$3"
    fail=1
  fi
}

expect 0 link add dev d0
expect 0 qdisc add dev d0 root handle 1: codel limit 5000 ecn
expect 0 qdisc change dev d0 root handle 1: codel target 10ms
same "codel after change" "$(tc qdisc show dev d0)" \
  "qdisc codel 1: root refcnt 2 limit 5000p target 10ms interval 100ms ecn "
same "codel -s" "$(tc -s qdisc show dev d0 2>/dev/null | tail -2)" \
  "  count 0 lastcount 0 ldelay 0us drop_next 0us
  maxpacket 0 ecn_mark 0 drop_overlimit 0"
same "codel -j" "$(tc -j qdisc show dev d0)" \
  '[{"kind":"codel","handle":"1:","root":true,"refcnt":2,"options":{"limit":5000,"target":9999,"interval":99999,"ecn":true}}]'
expect 1 qdisc change dev d0 root handle 1: codel flows 10
expect 255 qdisc change dev d0 root handle 1: codel target
# Another kind at the same handle is a new qdisc: tc refuses a replace there (2), so delete first.
expect 2 qdisc replace dev d0 root handle 1: red limit 1M avpkt 1500 min 100K max 300K ecn harddrop
expect 0 qdisc del dev d0 root
expect 0 qdisc add dev d0 root handle 1: red limit 1M avpkt 1500 min 100K max 300K ecn harddrop
same "red" "$(tc qdisc show dev d0)" \
  "qdisc red 1: root refcnt 2 limit 1Mb min 100Kb max 300Kb ecn harddrop "
same "red -s" "$(tc -s qdisc show dev d0 2>/dev/null | tail -1)" "  marked 0 early 0 pdrop 0 other 0 "
same "red -s -j" "$(tc -s -j qdisc show dev d0 2>/dev/null | grep -o '"marked":0,"early":0,"pdrop":0,"other":0')" \
  '"marked":0,"early":0,"pdrop":0,"other":0'
# -d: tc's details after the options (the EWMA weight, max_P, the idle table's cell log).
d_text=$(tc -d qdisc show dev d0)
if ! [[ "$d_text" =~ ^"qdisc red 1: root refcnt 2 limit 1Mb min 100Kb max 300Kb ecn harddrop ewma "[0-9]+" probability "[0-9.e-]+" Scell_log "[0-9]+" "?$ ]]; then
  echo "FAIL red -d: $d_text"; fail=1
fi
expect 2 qdisc replace dev d0 root handle 1: red limit 1M avpkt 1500 nodrop
expect 1 qdisc replace dev d0 root handle 1: red limit 1M min 100K
expect 1 qdisc replace dev d0 root handle 1: red limit 1M avpkt 1500 burst 1
expect 1 qdisc replace dev d0 root handle 1: red limit 1M avpkt 1500 probability 2
# The refused requests left the red qdisc as it was.
same "red kept" "$(tc qdisc show dev d0)" \
  "qdisc red 1: root refcnt 2 limit 1Mb min 100Kb max 300Kb ecn harddrop "
[ "$fail" -eq 0 ] && echo "tc_codel_red: ok"
exit "$fail"
