#!/usr/bin/env bash
# `txpath tc` against the running kernel's own tc for mq on a multi-queue device: the same
# commands go to an ifb device with 4 (and 16) TX queues and to a txpath configuration with the
# same device, and tc's text (qdisc show, class show, -s with the numbers masked, -j, -d) and exit
# statuses must agree: the default root (mq 0:), mq 1: with its default children, grafts,
# replace, refusals, deleting the root, and the order Linux lists a root's children in.
# Outputs are compared byte for byte (with -s, the counters masked: the kernel's devices see
# traffic of their own).
# Needs root, ip and tc, ifb and mq in the kernel, and net.core.default_qdisc = pfifo_fast (the
# default child); without them it prints SKIP and passes (without root it fails when CI is set).
set -u
bin=$(realpath "${1:?usage: tc_mq_kernel.sh PATH_TO_TXPATH}")
. "$(dirname "$0")/lib/common.bash"
dev="tqm${id}"
big="tqb${id}"
conf="$tmp/txpath.tc"
root_cleanup() {
  ip link del "$dev" >/dev/null 2>&1
  ip link del "$big" >/dev/null 2>&1
}

release_only "comparing with the kernel's tc"
needs_root "comparing with the kernel's tc needs root"
for tool in ip tc; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 0; }
done
if [ "$(sysctl -n net.core.default_qdisc 2>/dev/null)" != pfifo_fast ]; then
  echo "SKIP: net.core.default_qdisc is not pfifo_fast (the default child txpath models)"
  exit 0
fi

# make_dev NAME QUEUES: an ifb device with QUEUES TX queues, up, quiet (no IPv6), and the same
# device in the txpath configuration.
make_dev() {
  if ! ip link add "$1" numtxqueues "$2" type ifb 2>/dev/null; then
    echo "SKIP: cannot add an ifb device (no ifb in this kernel?)"
    exit 0
  fi
  sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" 2>/dev/null
  ip link set "$1" up
  "$bin" tc --config "$conf" link add dev "$1" numtxqueues "$2" txqueuelen \
    "$(cat "/sys/class/net/$1/tx_queue_len")" mtu "$(cat "/sys/class/net/$1/mtu")"
}

# both ARGS...: runs `tc ARGS` and `txpath tc ARGS`; their exit statuses must agree.
both() {
  tc "$@" >/dev/null 2>&1
  local k=$?
  "$bin" tc --config "$conf" "$@" >/dev/null 2>&1
  local t=$?
  if [ "$k" -ne "$t" ]; then
    echo "FAIL: tc $* -> kernel exit $k, txpath exit $t"
    fail=1
  fi
}

# same WHAT ARGS...: the output of `tc ARGS` and `txpath tc ARGS` must agree (with -s, the
# counters masked).
same() {
  local what=$1
  shift
  local mask=''
  case " $* " in *" -s "*) mask='/^ Sent\|^ backlog/s/[0-9][0-9]*/N/g' ;; esac
  tc "$@" 2>&1 | sed "$mask" >"$tmp/kernel"
  "$bin" tc --config "$conf" "$@" 2>/dev/null | sed "$mask" >"$tmp/txpath"
  if ! cmp -s "$tmp/kernel" "$tmp/txpath"; then
    echo "FAIL: $what: tc $* differs (kernel, then txpath):"
    diff "$tmp/kernel" "$tmp/txpath" | head -20
    fail=1
  fi
}

# Every view of the device, as both print it.
views() {
  same "$1" qdisc show dev "$dev"
  same "$1" class show dev "$dev"
  same "$1" -s qdisc show dev "$dev"
  same "$1" -s class show dev "$dev"
  same "$1" -j qdisc show dev "$dev"
  same "$1" -d qdisc show dev "$dev"
  same "$1" -s -d class show dev "$dev"
}

make_dev "$dev" 4
views "default root"

both qdisc add dev "$dev" root handle 1: mq
views "mq 1:"

both qdisc add dev "$dev" parent 1:1 handle 10: pfifo
both qdisc add dev "$dev" parent 1:4 handle 4: bfifo
both qdisc add dev "$dev" parent 1:2 handle 20: pfifo
both qdisc replace dev "$dev" parent 1:2 handle 21: bfifo
both qdisc change dev "$dev" parent 1:2 handle 21: bfifo limit 1000
views "grafted children"

# Refusals: the same exit status (the configuration unchanged, as the kernel's).
both qdisc add dev "$dev" root handle 1: mq
both qdisc add dev "$dev" parent 1:2 handle 22: mq
both qdisc add dev "$dev" parent 1:5 handle 25: pfifo
both qdisc add dev "$dev" parent 1:0 handle 25: pfifo
both qdisc del dev "$dev" parent 1:3
both qdisc add dev "$dev" root handle 1: mq foo
both qdisc replace dev "$dev" root handle 1: mq
views "after the refusals"

both qdisc del dev "$dev" root handle 1: mq
views "root deleted"
both qdisc del dev "$dev" root
both qdisc replace dev "$dev" root handle 1: pfifo
same "one root held by every queue" qdisc show dev "$dev"

# The order of a root's children: Linux's qdisc hash, bucket by bucket, newest first.
make_dev "$big" 16
both qdisc add dev "$big" root handle 7: mq
for g in "3 51" "5 53" "1 49" "8 56" "c 60" "10 64" "2 50" "4 1234" "6 ffee" "7 8001"; do
  set -- $g
  both qdisc add dev "$big" parent "7:$1" handle "$2:" pfifo
done
same "listing order" qdisc show dev "$big"
same "listing order" class show dev "$big"

[ "$fail" -eq 0 ] && echo "PASS: txpath tc agrees with the kernel's tc for mq"
exit "$fail"
