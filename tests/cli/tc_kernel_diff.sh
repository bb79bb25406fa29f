#!/usr/bin/env bash
# What `txpath tc` prints against the running kernel's own tc (scripts/tc_kernel_diff.py): a few
# dozen configurations of pfifo, bfifo, pfifo_head_drop, pfifo_fast, tbf and htb (rates, bursts
# and limits of many magnitudes), applied to an ifb device in a network namespace of the test's
# own and to a txpath configuration; qdisc show and class show with -s, -j and -d, and the
# kernel's warnings, must be the same text. Fails on any disagreement.
# Needs root, ip, tc and ifb; without them it prints SKIP and passes (without root it fails when
# CI is set).
set -u
bin=$(realpath "${1:?usage: tc_kernel_diff.sh PATH_TO_TXPATH}")
. "$(dirname "$0")/lib/common.bash"
ns="h_tcdiff${id}"
root_cleanup() { ip netns del "$ns" >/dev/null 2>&1; }

needs_root "comparing with the kernel's tc needs root"
release_only "comparing with the kernel's tc"
python3 "$(dirname "$0")/../../scripts/tc_kernel_diff.py" --txpath "$bin" --netns "$ns"
rc=$?
case $rc in
  0) echo "PASS: txpath tc prints what the kernel's tc prints" ;;
  77) exit 0 ;;  # the script printed SKIP and why
  *) echo "FAIL: txpath tc and the kernel's tc disagree (above)"; exit 1 ;;
esac
