#!/usr/bin/env bash
# `txpath exporter` (issue 17, "Metrics for dashboards"), end to end: while a bench serves a live
# tc configuration, the exporter's GET /metrics shows its qdisc and class as labelled OpenMetrics
# series whose counters grow between scrapes; hostile clients (a 100 KiB header, another method,
# another path, a client that sends nothing) are refused or dropped and it keeps serving; bad
# --listen values exit 2 with one line; SIGTERM stops it with exit 0.
# Issue 31 (class 6): with two benches on two files that name the same device, every series is
# told apart by its `config` label and the page is valid for Prometheus: the OpenMetrics text
# (served when Accept asks for it) passes prometheus_client's OpenMetrics parser, the classic
# text format (served otherwise) passes `promtool check metrics` with no lint problem.
set -u
bin=$(realpath "${1:?usage: metrics.sh PATH_TO_TXPATH}")
tmp=$(mktemp -d)
bench_pid=
bench2_pid=
exp_pid=
trap '[ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null; [ -n "$bench2_pid" ] && kill "$bench2_pid" 2>/dev/null; [ -n "$exp_pid" ] && kill "$exp_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
conf="$tmp/metrics.tc"
conf2="$tmp/other.tc"  # a second file naming the same device
tc() { "$bin" tc --config "$conf" "$@"; }
# The OpenMetrics parser: prometheus_client (Debian's python3-prometheus-client, for /usr/bin/python3).
py=python3
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then py=$p; break; fi
done
bad() { echo "FAIL: $*"; fail=1; }
# A checker that is not installed: SKIP with why, except in CI (scripts/install-deps.sh installs
# both there), where a check that did not run is a failure.
skip() { if [ -n "${CI:-}" ]; then bad "$1 (CI installs it: scripts/install-deps.sh)"; else echo "SKIP: $1"; fi; }

# Bad --listen values: exit 2, one line on stderr, nothing served.
for v in "nocolon" "127.0.0.1:65536" "127.0.0.1:-1" "127.0.0.1:" "::1:80" "no-such-host.invalid:9101" $'bad\nhost:1'; do
  "$bin" exporter --listen "$v" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || bad "--listen $(printf %q "$v"): exit $rc, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || bad "--listen $(printf %q "$v"): not one line: $(cat "$tmp/err")"
done

tc link add dev m0 || bad "link add"
tc qdisc add dev m0 root handle 1: htb default 10 || bad "qdisc add"
tc class add dev m0 parent 1: classid 1:10 htb rate 8mbit || bad "class add"

tc qdisc add dev m0 parent 1:10 handle 10: pfifo || bad "leaf qdisc add"
# The same tree in a second file: the same device, handles, parents and kinds (before the config
# label, one label set twice, and prometheus_client's "Invalid metric grouping").
cp "$conf" "$conf2"

"$bin" bench --tc-config "$conf" --strategy busylock --device null --threads 1 --repeat 1 --duration 30 >"$tmp/bench.out" 2>&1 &
bench_pid=$!
"$bin" bench --tc-config "$conf2" --strategy busylock --device null --threads 1 --repeat 1 --duration 30 >"$tmp/bench2.out" 2>&1 &
bench2_pid=$!
for c in "$conf" "$conf2"; do
  for _ in $(seq 300); do  # at most 30 s until the bench serves its counters
    "$bin" tc --config "$c" -s qdisc show dev m0 >/dev/null 2>"$tmp/err"
    [ -s "$tmp/err" ] || break
    sleep 0.1
  done
  [ -s "$tmp/err" ] && bad "the bench on $c never served its counters: $(cat "$tmp/err")"
done

# Port 0: the kernel picks a free one, the exporter says which.
"$bin" exporter --listen 127.0.0.1:0 >"$tmp/exp.out" 2>"$tmp/exp.err" &
exp_pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/exp.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^txpath exporter: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/exp.out")
[ -n "$port" ] || { bad "no listening line: $(cat "$tmp/exp.out" "$tmp/exp.err")"; exit 1; }

"$py" - "$port" "$(realpath "$conf")" "$(realpath "$conf2")" "$tmp/plain.txt" <<'PY' || fail=1
import os, re, socket, sys, time, urllib.request, urllib.error
port = int(sys.argv[1])
conf, conf2, plain_out = sys.argv[2], sys.argv[3], sys.argv[4]
url = f"http://127.0.0.1:{port}/metrics"
ok = True
def bad(msg):
    global ok
    print("FAIL:", msg); ok = False

# Prometheus 2.x's Accept header: OpenMetrics first.
OM = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
def fetch(accept):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers["Content-Type"], r.read().decode()

def scrape():
    ctype, body = fetch(OM)
    if ctype != "application/openmetrics-text; version=1.0.0; charset=utf-8":
        bad(f"content type {ctype!r}")
    return body

def value(body, name, labels):
    m = re.search("^" + re.escape(name + "{" + labels + "}") + r" (\d+)$", body, re.M)
    return int(m.group(1)) if m else None

def check_format(body):
    if not body.endswith("# EOF\n"): bad("the body does not end with # EOF")
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
    for fam in ("packets", "bytes", "drops", "overlimits", "requeues"):
        for obj in ("qdisc", "class"):
            if types.get(f"txpath_{obj}_{fam}") != "counter": bad(f"TYPE of txpath_{obj}_{fam}: {types.get(f'txpath_{obj}_{fam}')}")
    for g in ("backlog_bytes", "backlog_packets", "xstat"):
        if types.get(f"txpath_qdisc_{g}") != "gauge": bad(f"TYPE of txpath_qdisc_{g}")
    for line in body.splitlines():
        if line.startswith("#"): continue
        name = line.split("{")[0]
        if name.endswith("_total") and types.get(name[:-6]) != "counter": bad(f"{name} without a counter TYPE")

def esc(v):
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
q = f'config="{esc(conf)}",dev="m0",handle="1:",parent="root",kind="htb"'
c = f'config="{esc(conf)}",dev="m0",handle="1:10",parent="1:",kind="htb"'
q2 = f'config="{esc(conf2)}",dev="m0",handle="1:",parent="root",kind="htb"'
first = scrape()
check_format(first)
# Two files, one device name: two label sets, and a page an OpenMetrics parser takes whole.
if value(first, "txpath_qdisc_packets_total", q2) is None: bad("no series of the second file: " + q2)
try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
except ImportError:
    why = "prometheus_client is not installed (Debian package python3-prometheus-client, for /usr/bin/python3): OpenMetrics parser check not run"
    if os.environ.get("CI"): bad(why + " (CI installs it: scripts/install-deps.sh)")
    else: print("SKIP: " + why)
    om_parse = None
if om_parse:
    try:
        fams = {f.name: f for f in om_parse(first)}
        labels = {tuple(sorted(s.labels.items())) for s in fams["txpath_qdisc_packets"].samples}
        if len(labels) != len(fams["txpath_qdisc_packets"].samples): bad("a label set given twice")
    except Exception as e:
        bad(f"prometheus_client's OpenMetrics parser refuses the page: {e}")
# No Accept header (or no OpenMetrics in it): the classic text format, for promtool below.
ctype, plain = fetch(None)
if ctype != "text/plain; version=0.0.4; charset=utf-8": bad(f"plain content type {ctype!r}")
if "# EOF" in plain: bad("# EOF in the classic text format")
if not re.search(r"^# TYPE txpath_qdisc_packets_total counter$", plain, re.M): bad("classic TYPE line of a counter")
if value(plain, "txpath_qdisc_packets_total", q2) is None: bad("classic text: no series of the second file")
try:
    from prometheus_client.parser import text_string_to_metric_families as text_parse
    list(text_parse(plain))
except ImportError:
    pass
except Exception as e:
    bad(f"prometheus_client's text parser refuses the classic page: {e}")
with open(plain_out, "w") as f: f.write(plain)
p1 = value(first, "txpath_qdisc_packets_total", q)
c1 = value(first, "txpath_class_packets_total", c)
if p1 is None: bad("no qdisc series with labels " + q + ":\n" + first[:2000])
if c1 is None: bad("no class series with labels " + c)
if value(first, "txpath_qdisc_backlog_packets", q) is None: bad("no backlog gauge")
if not re.search(r'^txpath_class_xstat\{' + re.escape(c) + r',name="tokens"\} -?\d+$', first, re.M): bad("no htb tokens xstat")

# Hostile clients: each refused or dropped; the exporter keeps serving meanwhile.
def raw(data, wait=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        s.sendall(data)
    except OSError:
        return b""
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
    except OSError:
        pass
    s.close()
    return out

idle = socket.create_connection(("127.0.0.1", port))  # connects, sends nothing
half = socket.create_connection(("127.0.0.1", port)); half.sendall(b"GET /metrics HTTP/1.1\r\n")  # never finishes
r = raw(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (100 * 1024) + b"\r\n\r\n")
if r and not r.startswith(b"HTTP/1.1 431"): bad(f"100 KiB header: {r[:40]!r}")
r = raw(b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
if not r.startswith(b"HTTP/1.1 405"): bad(f"POST: {r[:40]!r}")
r = raw(b"DELETE /metrics HTTP/1.1\r\n\r\n")
if not r.startswith(b"HTTP/1.1 405"): bad(f"DELETE: {r[:40]!r}")
r = raw(b"GET /other HTTP/1.1\r\n\r\n")
if not r.startswith(b"HTTP/1.1 404"): bad(f"another path: {r[:40]!r}")
r = raw(b"garbage\r\n\r\n")
if not r.startswith(b"HTTP/1.1 400"): bad(f"garbage: {r[:40]!r}")
if b"Connection: close" not in r: bad("no Connection: close")

time.sleep(0.5)
start = time.monotonic()
second = scrape()  # served while the idle and half clients still hold their connections
if time.monotonic() - start > 4: bad("a silent client held the scrape up")
check_format(second)
p2 = value(second, "txpath_qdisc_packets_total", q)
c2 = value(second, "txpath_class_packets_total", c)
if p1 is not None and (p2 is None or p2 <= p1): bad(f"qdisc packets did not grow: {p1} -> {p2}")
if c1 is not None and (c2 is None or c2 <= c1): bad(f"class packets did not grow: {c1} -> {c2}")
# The silent client is dropped after the read timeout (5 s).
idle.settimeout(15)
try:
    got = idle.recv(100)
    if got: bad(f"the silent client got {got[:40]!r}")
except socket.timeout:
    bad("the silent client was never dropped")
except OSError:
    pass
sys.exit(0 if ok else 1)
PY

# promtool (Debian's prometheus) lints the classic text format: no problem at all.
if command -v promtool >/dev/null; then
  if [ -s "$tmp/plain.txt" ]; then
    promtool check metrics <"$tmp/plain.txt" >"$tmp/promtool.out" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] && [ ! -s "$tmp/promtool.out" ] || bad "promtool check metrics: exit $rc: $(cat "$tmp/promtool.out")"
  else
    bad "no classic text page for promtool"
  fi
else
  skip "promtool is not installed (Debian package prometheus): promtool check metrics not run"
fi

kill -TERM "$exp_pid"
wait "$exp_pid"
rc=$?
exp_pid=
[ "$rc" -eq 0 ] || bad "SIGTERM: exit $rc, expected 0"
[ -s "$tmp/exp.err" ] && bad "the exporter wrote to stderr: $(cat "$tmp/exp.err")"

kill "$bench_pid" "$bench2_pid" 2>/dev/null
wait "$bench_pid" "$bench2_pid" 2>/dev/null
bench_pid=
bench2_pid=

# txpath bench --metrics: the bench's own queue, served while it runs; a bad value exits 2.
"$bin" bench --metrics nope --tc-config "$conf" --device null --duration 1 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || bad "bench --metrics nope: exit $rc, expected 2"
grep -q -- '--metrics "nope"' "$tmp/err" || bad "bench --metrics nope: $(cat "$tmp/err")"
"$bin" bench --tc-config "$conf" --strategy busylock --device null --threads 1 --repeat 1 --duration 30 \
  --metrics 127.0.0.1:0 >"$tmp/bench.out" 2>"$tmp/bench.err" &
bench_pid=$!
for _ in $(seq 100); do grep -q 'metrics on' "$tmp/bench.err" 2>/dev/null && break; sleep 0.1; done
bport=$(sed -n 's|^txpath bench: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$tmp/bench.err")
[ -n "$bport" ] || bad "bench --metrics: no address: $(cat "$tmp/bench.err")"
got=
series="config=\"$(realpath "$conf")\",dev=\"m0\",handle=\"1:\",parent=\"root\",kind=\"htb\""
for _ in $(seq 100); do  # the first round's worker serves its queue a little after the start
  got=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
        "http://127.0.0.1:$bport/metrics" 2>&1)
  grep -qF "txpath_qdisc_packets_total{$series} " <<<"$got" &&
    grep -q "^txpath_qdisc_packets_total{.*} [1-9]" <<<"$got" && break
  sleep 0.1
done
grep -qF "txpath_qdisc_packets_total{$series} " <<<"$got" && grep -q "^txpath_qdisc_packets_total{.*} [1-9]" <<<"$got" ||
  bad "bench --metrics: no qdisc series: $got"
kill -TERM "$bench_pid"
wait "$bench_pid"
rc=$?
bench_pid=
[ "$rc" -eq 143 ] || bad "bench --metrics stopped by SIGTERM: exit $rc, expected 143"

[ "$fail" -eq 0 ] && echo "metrics: ok"
exit "$fail"
