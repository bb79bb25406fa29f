#!/usr/bin/env bash
# `txpath tc` against the machine's own tc, command by command: the cases of
# lib/tc_kernel_cmds.txt (good and bad commands: tc's number grammar, its exit statuses, the
# kernel's refusals, tc's messages) run through the real tc on an ifb device in a network
# namespace of this test's own and through `txpath tc` on a scratch configuration holding the
# same device (scripts/tc_kernel_cmds.py). Each must give tc's exit status and, when tc fails,
# a first stderr line that begins with tc's.
# Needs root, ip, tc, python3 and ifb in the kernel; without them it prints SKIP and passes
# (without root it fails when CI is set).
set -u
bin=$(realpath "${1:?usage: tc_kernel_cmds.sh PATH_TO_TXPATH}")
. "$(dirname "$0")/lib/common.bash"
root=$(cd "$(dirname "$0")/../.." && pwd)
ns="txtc${id}"
root_cleanup() { ip netns del "$ns" >/dev/null 2>&1; }

needs_root "comparing with the kernel's tc needs root"
release_only "comparing with the kernel's tc"
for tool in ip tc python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 0; }
done
python3 "$root/scripts/tc_kernel_cmds.py" --txpath "$bin" --netns "$ns" \
  --cases "$(dirname "$0")/lib/tc_kernel_cmds.txt"
rc=$?
[ "$rc" -eq 77 ] && exit 0  # SKIP, printed by the script
exit "$rc"
