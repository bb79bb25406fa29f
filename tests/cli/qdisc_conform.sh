#!/usr/bin/env bash
# The same traffic through the kernel's qdiscs and txpath's, compared at the receiver
# (scripts/qdisc_conform.py, docs/conformance.md): every scenario's short form (2-3 s a side) on
# a veth testbed of the test's own, and the runner's self-test on a few of them (kernel against
# kernel: equal, so that a difference the runner finds is txpath's). Fails on any difference.
# Needs root, ip and tc; without them it prints SKIP and passes (without root it fails when CI
# is set).
set -u
bin=$(realpath "${1:?usage: qdisc_conform.sh PATH_TO_TXPATH}")
. "$(dirname "$0")/lib/common.bash"
script="$(dirname "$0")/../../scripts/qdisc_conform.py"
names=(--dev "tq${id}a" --peer "tq${id}b" --netns "txpath-tq${id}" --subnet "10.76.$x")

needs_root "comparing with the kernel's qdiscs needs root"
release_only "comparing with the kernel's qdiscs"
python3 "$script" --txpath "$bin" "${names[@]}" --self-test --only "siblings borrow"
rc=$?
case $rc in
  0) echo "PASS: the self-test finds the kernel equal to itself" ;;
  77) exit 0 ;;
  *) echo "FAIL: the self-test found the kernel different from itself (above)"; exit 1 ;;
esac
python3 "$script" --txpath "$bin" "${names[@]}"
rc=$?
case $rc in
  0) echo "PASS: every comparable scenario equal to the kernel's" ;;
  77) exit 0 ;;
  *) echo "FAIL: txpath's qdiscs and the kernel's differ (above)"; exit 1 ;;
esac
