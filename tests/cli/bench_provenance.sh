#!/usr/bin/env bash
# `txpath bench --json` / `--csv` provenance and contents (issue 16, sections 2 and 4):
#  - the top level records the build (txpath.version equal to what `txpath --version` prints),
#    the date, the command line (an argument that is not UTF-8 round-trips through
#    command_line_hex), the host and the CPU topology;
#  - every row has its round statistics; a key or a CSV cell that does not apply is left out or
#    empty (under --device null: no vs_kernel_* keys, empty vs_kernel_* cells, and
#    config.kernel_row false);
#  - each row with a txpath qdisc keeps its tree's final `tc -s` statistics ("tc"): an htb
#    --tc-config run's class 1:10 carried the traffic, fq_codel's xstats are there, a
#    multi-queue run shows mq's root as the sum of its queues; the floor row has none.
set -u
bin=$(realpath "${1:?usage: bench_provenance.sh PATH_TO_TXPATH}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
FAIL() { echo "FAIL: $*"; fail=1; }
quick=(--device null --threads 2 --duration 0.05 --quiet)

# ---- the build: --version and the JSON agree ---------------------------------------------------
version_line=$("$bin" --version | head -1)
version=${version_line#txpath }
[ -n "$version" ] && [ "$version_line" = "txpath $version" ] || FAIL "--version: $version_line"

# ---- provenance, statistics keys, empty cells under --device null ------------------------------
odd="$tmp/out"$'\xff'".json"  # a --json name that is not UTF-8: the command line records it
args=(bench "${quick[@]}" --strategy busylock,nolock --repeat 2 --json "$odd" --csv "$tmp/null.csv")
before=$(date -u +%s)
"$bin" "${args[@]}" >"$tmp/null.out" 2>&1 || { FAIL "null run exited $?"; cat "$tmp/null.out"; }
after=$(date -u +%s)
cp "$odd" "$tmp/null.json" 2>/dev/null || FAIL "no JSON written to the odd name"
odd_hex=$(printf '%s' "$odd" | od -An -tx1 | tr -d ' \n')
if ! jq -e --arg v "$version" --arg bin "$bin" --arg hex "$odd_hex" --arg kernel "$(uname -r)" \
     --arg host "$(hostname)" --argjson before "$before" --argjson after "$after" '
  (.txpath.version == $v) and (.txpath.compiler | type == "string" and length > 0) and
  (.txpath.build_type | type == "string" and length > 0) and
  (.date | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")) and
  (.date | fromdateiso8601 >= $before and fromdateiso8601 <= $after) and
  (.command_line | length == 17 and .[0] == $bin and .[1] == "bench" and (.[14] | contains("\ufffd"))) and
  (.command_line_hex | length == 17 and .[14] == $hex) and
  (.host.kernel == $kernel and .host.hostname == $host) and
  (.topology | (.cores >= 1) and (.pus >= .cores) and (.numa_nodes >= 1) and
               (.cpus | type == "array" and length >= 1) and (.cores_by_node | type == "array")) and
  (.config.kernel_row == false) and
  (.results | length == 2) and
  (.results | all(has("vs_kernel_mpps") or has("vs_kernel_cpu") or has("vs_kernel_mpps_ci95") | not)) and
  (.results | all(has("vs_floor_cpu") | not)) and
  (.results | all(.vs_busylock_mpps > 0 and .vs_busylock_cpu > 0)) and
  (.results | all((.mpps_samples | type == "array") and (.cpu_samples | type == "array") and
                  (.noise_samples | type == "array") and (.unstable | type == "boolean") and
                  (.doorbells | type == "number") and (.drained | type == "boolean")))
' "$tmp/null.json" >/dev/null; then
  FAIL "null run: JSON provenance/keys"; jq 'del(.results[].tc)' "$tmp/null.json"
fi
# CSV: the ratio cells without their reference row are empty, not 0.
csv_cell() {  # FILE ROW COLUMN: the cell (no quoting in these rows)
  local col
  col=$(head -1 "$1" | tr ',' '\n' | grep -nx "$3" | cut -d: -f1)
  [ -n "$col" ] || { echo "<no column $3>"; return; }
  sed -n "$(( $2 + 1 ))p" "$1" | cut -d, -f"$col"
}
for row in 1 2; do
  for c in vs_kernel_mpps vs_kernel_cpu vs_floor_cpu vs_kernel_mpps_ci95_lo; do
    cell=$(csv_cell "$tmp/null.csv" "$row" "$c")
    [ -z "$cell" ] || FAIL "CSV row $row $c: '$cell', not empty"
  done
  [ -n "$(csv_cell "$tmp/null.csv" "$row" vs_busylock_mpps)" ] || FAIL "CSV row $row: vs_busylock_mpps empty"
  case "$(csv_cell "$tmp/null.csv" "$row" unstable)" in  # a noisy machine may make it either
    true|false) ;;
    *) FAIL "CSV row $row: unstable is not true/false" ;;
  esac
done

# ---- the qdisc's own story: htb --tc-config -----------------------------------------------------
conf="$tmp/htb.tc"
tc() { "$bin" tc --config "$conf" "$@" || FAIL "tc $*"; }
tc link add dev d0 txqueuelen 500
tc qdisc add dev d0 root handle 1: htb default 10
tc class add dev d0 parent 1: classid 1:1 htb rate 100mbit
tc class add dev d0 parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit
tc class add dev d0 parent 1:1 classid 1:20 htb rate 70mbit ceil 100mbit
tc qdisc add dev d0 parent 1:10 handle 10: fq_codel
"$bin" bench "${quick[@]}" --tc-config "$conf" --strategy floor,busylock --repeat 1 \
  --json "$tmp/htb.json" >"$tmp/htb.out" 2>&1 || { FAIL "htb run exited $?"; cat "$tmp/htb.out"; }
if ! jq -e '
  (.results[] | select(.strategy == "floor") | has("tc") | not) and
  (.results[] | select(.strategy == "busylock") | .tc |
    (.qdiscs | length == 2) and
    (.qdiscs[0] | .kind == "htb" and .handle == "1:" and .root == true and .packets > 0 and .bytes > 0) and
    (.qdiscs[1] | .kind == "fq_codel" and .parent == "1:10" and .packets > 0 and
                  has("new_flow_count") and has("maxpacket") and has("drop_overlimit")) and
    (.classes | length == 3) and
    (.classes[] | select(.handle == "1:10") | .packets > 0 and .bytes > 0 and has("tokens") and .leaf == "10:") and
    (.classes[] | select(.handle == "1:20") | .packets == 0))
' "$tmp/htb.json" >/dev/null; then
  FAIL "htb --tc-config: final tc statistics"; jq '.results' "$tmp/htb.json"
fi
# The same form as `txpath tc -s -j class show` prints (its keys; its counters are idle now).
live_keys=$("$bin" tc --config "$conf" -s -j class show dev d0 2>/dev/null | jq -c '[.[] | keys] | sort')
row_keys=$(jq -c '[.results[] | select(.strategy == "busylock") | .tc.classes[] | keys] | sort' "$tmp/htb.json")
[ "$live_keys" = "$row_keys" ] || FAIL "tc class keys differ from tc -s -j: $row_keys vs $live_keys"

# ---- --qdisc fq_codel: the last round's counters (not the sum of rounds) -----------------------
"$bin" bench "${quick[@]}" --qdisc fq_codel --strategy busylock --repeat 2 \
  --json "$tmp/fq.json" >"$tmp/fq.out" 2>&1 || { FAIL "fq_codel run exited $?"; cat "$tmp/fq.out"; }
if ! jq -e '.results[0] as $r | $r.tc.qdiscs | length == 1 and
    (.[0] | .kind == "fq_codel" and .root == true and .packets > 0 and .packets < $r.sent and
            has("new_flow_count") and has("ecn_mark"))' "$tmp/fq.json" >/dev/null; then
  FAIL "--qdisc fq_codel: final tc statistics"; jq '.results' "$tmp/fq.json"
fi

# ---- several TX queues: mq's root is the sum of its queues' trees ------------------------------
"$bin" bench "${quick[@]}" --qdisc "pfifo limit 500" --queues 2 --strategy busylock --repeat 1 \
  --json "$tmp/mq.json" >"$tmp/mq.out" 2>&1 || { FAIL "--queues 2 run exited $?"; cat "$tmp/mq.out"; }
if ! jq -e '.results[0].tc |
    (.qdiscs | length == 3 and .[0].kind == "mq" and .[0].packets > 0 and
               .[0].packets == (.[1].packets + .[2].packets) and
               (.[1:] | all(.kind == "pfifo" and .options.limit == 500))) and
    (.classes | map(.handle) | sort == ["1:1", "1:2"])' "$tmp/mq.json" >/dev/null; then
  FAIL "--queues 2: final tc statistics"; jq '.results' "$tmp/mq.json"
fi
conf="$tmp/mq.tc"
tc link add dev m0 numtxqueues 2
tc qdisc add dev m0 root handle 1: mq
tc qdisc add dev m0 parent 1:1 handle 10: fq_codel
"$bin" bench "${quick[@]}" --tc-config "$conf" --queues 2 --strategy busylock --repeat 1 \
  --json "$tmp/mqtc.json" >"$tmp/mqtc.out" 2>&1 || { FAIL "mq --tc-config run exited $?"; cat "$tmp/mqtc.out"; }
if ! jq -e '.results[0].tc.qdiscs as $q |
    ($q[0] | .kind == "mq" and .packets > 0) and
    ($q | map(select(.kind == "fq_codel" and .handle == "10:")) | length == 1) and
    ($q[0].packets == ($q[1:] | map(.packets) | add))' "$tmp/mqtc.json" >/dev/null; then
  FAIL "mq --tc-config: final tc statistics"; jq '.results' "$tmp/mqtc.json"
fi

# ---- a tree too large for a row's final statistics: an error document, the row stands ----------
# (issue 31: 8000 htb classes made every round's worker fail, and the bench discarded its rows)
conf="$tmp/big.tc"
{ echo "link add dev b0"; echo "qdisc add dev b0 root handle 1: htb default 1"
  for i in $(seq 1 8000); do printf 'class add dev b0 parent 1: classid 1:%x htb rate 1mbit\n' "$i"; done
} >"$tmp/big.batch"
"$bin" tc --config "$conf" -batch "$tmp/big.batch" >/dev/null 2>&1 || FAIL "tc -batch of 8000 classes"
"$bin" bench --device null --threads 1 --duration 0.02 --quiet --tc-config "$conf" --strategy busylock --repeat 1 \
  --json "$tmp/big.json" >"$tmp/big.out" 2>&1 || { FAIL "8000-class run exited $?"; cat "$tmp/big.out"; }
jq -e '.results[0] | .sent > 0 and (.tc.error | test("more than the limit of 1 MiB for a row"))' \
  "$tmp/big.json" >/dev/null || { FAIL "8000 classes: the row or its tc error"; head -c 2000 "$tmp/big.json"; }

[ "$fail" -eq 0 ] && echo "bench provenance: ok"
exit "$fail"
