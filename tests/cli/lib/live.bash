# Sourced by the live-change tests (tc_live.sh, tc_live_rounds.sh) after setting conf_name:
#   conf_name=NAME.tc; . "$(dirname "$0")/lib/live.bash" "$@"
# Sets bin (the txpath under test, $1), tmp (removed on exit, after the background bench in
# $bench_pid is killed), fail=0, conf (the tc file, $tmp/$conf_name); defines bad MESSAGE (a
# failure, the test goes on) and tc ARGS (`txpath tc` on $conf).
bin=$(realpath "${1:?usage: $(basename "$0") PATH_TO_TXPATH}")
tmp=$(mktemp -d)
bench_pid=
trap '[ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
conf="$tmp/${conf_name:?set conf_name before sourcing lib/live.bash}"
tc() { "$bin" tc --config "$conf" "$@"; }
bad() { echo "FAIL: $*"; fail=1; }
