#!/usr/bin/env python3
"""Same traffic, same result: txpath's qdiscs against the kernel's, measured at the receiver.

Each scenario is a qdisc tree (tc commands), a schedule of flows (rate, frame size, priority or
TOS, start and stop, a TX queue) and, for some, live changes at given times. It runs twice on a
veth testbed of this script's own (host end txc0, peer end txc1 in netns txpath-conform; mq
scenarios on a second one with two TX queues, txc0q and txc1q in txpath-conform-mq, whose queue q
the kernel's side picks by XPS from CPU q % CPUs, where txpath offer pins queue q's sender):
  kernel: the tree installed with the machine's `tc` on txc0; `txpath offer --via kernel` sends
          each flow from its own UDP socket (SO_PRIORITY / IP_TOS) into that qdisc;
  txpath: the same commands into a scratch `txpath tc` configuration; `txpath offer --via txpath`
          sends the same schedule through afpacket:txc0 (the kernel's qdisc bypassed) and that
          tree, the priority set as the kernel sets skb->priority.
`txpath sink` on txc1 counts each flow's bytes in 1 s windows, its first arrivals (the departure
curve) and its order. What "the same" means (docs/conformance.md):
  - each flow's bytes in each 1 s window within 3% (plus one frame: a window's edge may fall on
    either side of one arrival) of the kernel's; the window holding a live change is not compared;
  - each qdisc's and class's drop count (tc -s on both sides) within 5% (or both zero; plus one
    packet);
  - per flow, no reordering and no duplicate on either side;
  - a shaper's burst (bytes that passed above the rate line, from the curve) within one MTU.
A scenario that differs runs on the kernel once more: if txpath equals that second kernel run,
it is equal; if the two kernel runs differ from each other too, the kernel does not reproduce
itself there (its result hangs on timing, not on its rules) and the scenario gets no verdict
("kernel not reproducible", listed apart). Otherwise txpath's side runs once more, and the
scenario is equal if that run equals either kernel run: only a difference that txpath
reproduces, from a kernel that reproduces itself, is txpath's. A scenario whose qdisc this kernel lacks (`tc qdisc add` fails) is listed "not
comparable here".

usage: qdisc_conform.py [--txpath BIN] [--full] [--self-test] [--only SUBSTRING] [--list]
                        [--json FILE] [--markdown FILE] [--verbose]
                        [--dev IF --peer IF --netns NAME --subnet A.B.C]
  --full       the long form: each scenario three times as long (more windows compared)
  --self-test  both runs on the kernel: every scenario must come out equal, so that every
               difference the normal run finds is txpath's
  --markdown   the summary table, written to FILE; a FILE with the markers <!-- qdisc-conform -->
               and <!-- /qdisc-conform --> (README.md) gets it between them
Exit status: 0 every comparable scenario equal; 1 a difference; 2 a usage error or a run that
failed; 77 cannot run here (not root, no tc or ip).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DEV, PEER, NETNS = "txc0", "txc1", "txpath-conform"
HOST_ADDR, PEER_ADDR = "10.79.0.1/24", "10.79.0.2/24"
WINDOW_MS = 1000
CURVE = 4000
MTU_FRAME = 1514
RATE_TOL, DROP_TOL, BURST_TOL = 0.03, 0.05, MTU_FRAME


def S(name, tc, flows, duration=2.0, changes=(), burst=None, timing=None, queues=1):
    """A scenario: tc commands ('{dev}' is the device), flows (txpath offer --flow specs),
    seconds, live changes [(seconds, tc command)], burst: the shaper's rate for the burst check.
    timing: where the result hangs on when dequeues happen (docs/conformance.md names the
    scenario, the size and the cause): a difference is printed and counted as documented, and
    does not fail the run. queues: the testbed's TX queues (2: its multi-queue testbed; each
    flow's queue=Q picks its queue: on the kernel's side by XPS, CPU Q % CPUs sending)."""
    return {"name": name, "tc": tc, "flows": flows, "duration": duration, "changes": list(changes),
            "burst": burst, "timing": timing, "queues": queues}


def htb_root(default="0", r2q=None):
    return ["qdisc add dev {dev} root handle 1: htb default " + default + (f" r2q {r2q}" if r2q else "")]


def htb_class(cid, parent, rate, ceil=None, extra=""):
    return (f"class add dev {{dev}} parent {parent} classid {cid} htb rate {rate}"
            + (f" ceil {ceil}" if ceil else "") + (" " + extra if extra else ""))


def F(rate, prio=None, tos=None, size=1000, start=None, stop=None, queue=None):
    spec = f"rate={rate},size={size}"
    if queue is not None:
        spec += f",queue={queue}"
    if prio is not None:
        spec += f",prio={prio}"
    if tos is not None:
        spec += f",tos={tos}"
    if start is not None:
        spec += f",start={start}"
    if stop is not None:
        spec += f",stop={stop}"
    return spec


def rate_bytes(text):
    m = re.fullmatch(r"([0-9.]+)(kbit|mbit|gbit|bit)", text)
    mult = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)]
    return float(m.group(1)) * mult / 8


def size_bytes(text):
    m = re.fullmatch(r"([0-9.]+)(kb|mb|b)", text)
    return float(m.group(1)) * {"b": 1, "kb": 1024, "mb": 1024 * 1024}[m.group(2)]


# A burst is compared only when it takes at least this long to leave at the offered rate: a
# sender that stalls for t during it moves the measured burst by rate * t (tokens past a full
# bucket are lost), and stalls of a few ms happen on a loaded machine.
MIN_BURST_PHASE_S = 0.015


def tbf_over(rate, offered, burst="20kb", limit="60kb", size=1000):
    phase = size_bytes(burst) / ((rate_bytes(offered) - rate_bytes(rate)))
    return S(f"tbf {rate} burst {burst} offered {offered}",
             [f"qdisc add dev {{dev}} root handle 1: tbf rate {rate} burst {burst} limit {limit}"],
             [F(offered, size=size)], burst=rate if phase >= MIN_BURST_PHASE_S else None)


def under_tbf(child, flows, rate="10mbit", name=None):
    """A child qdisc behind a tbf: the shaper makes the bottleneck the child sees."""
    return S(name or f"{child} under tbf {rate}",
             [f"qdisc add dev {{dev}} root handle 1: tbf rate {rate} burst 10kb limit 1mb",
              f"qdisc add dev {{dev}} parent 1:1 handle 10: {child}"], flows)


def two_siblings(name, a, b, flows, parent_rate="20mbit", extra_a="", extra_b="", duration=2.0,
                 changes=()):
    return S(name, htb_root() + [htb_class("1:1", "1:", parent_rate, parent_rate),
                                 htb_class("1:10", "1:1", a[0], a[1], extra_a),
                                 htb_class("1:20", "1:1", b[0], b[1], extra_b)],
             flows, duration=duration, changes=changes)


SCENARIOS = [
    # tbf: burst then rate, limit drops, offered under and over, 1 Mbit/s to 200 Mbit/s
    S("tbf 1mbit offered 0.5mbit (under)",
      ["qdisc add dev {dev} root handle 1: tbf rate 1mbit burst 10kb limit 30kb"], [F("500kbit")]),
    tbf_over("1mbit", "2mbit", burst="10kb", limit="30kb"),
    S("tbf 10mbit offered 5mbit (under)",
      ["qdisc add dev {dev} root handle 1: tbf rate 10mbit burst 20kb limit 60kb"], [F("5mbit")]),
    tbf_over("10mbit", "20mbit"),
    tbf_over("10mbit", "20mbit", burst="100kb", limit="200kb"),
    tbf_over("50mbit", "80mbit", burst="200kb", limit="400kb"),
    tbf_over("200mbit", "300mbit", burst="500kb", limit="1mb"),
    S("tbf 10mbit small limit", ["qdisc add dev {dev} root handle 1: tbf rate 10mbit burst 5kb limit 5kb"],
      [F("30mbit")]),
    S("tbf 10mbit peakrate 20mbit",
      ["qdisc add dev {dev} root handle 1: tbf rate 10mbit burst 50kb peakrate 20mbit mtu 2kb limit 100kb"],
      [F("40mbit")]),
    S("tbf 5mbit 300-byte frames", ["qdisc add dev {dev} root handle 1: tbf rate 5mbit burst 10kb limit 30kb"],
      [F("10mbit", size=300)], burst="5mbit"),
    # htb, one level
    S("htb one class 5mbit offered 2mbit (under)", htb_root() + [htb_class("1:10", "1:", "5mbit")],
      [F("2mbit", prio="1:10")]),
    S("htb one class 1mbit offered 3mbit", htb_root() + [htb_class("1:10", "1:", "1mbit")],
      [F("3mbit", prio="1:10")]),
    S("htb one class 10mbit offered 20mbit", htb_root() + [htb_class("1:10", "1:", "10mbit")],
      [F("20mbit", prio="1:10")]),
    S("htb one class 100mbit offered 150mbit", htb_root() + [htb_class("1:10", "1:", "100mbit")],
      [F("150mbit", prio="1:10")]),
    S("htb default class", htb_root("20") + [htb_class("1:10", "1:", "2mbit"), htb_class("1:20", "1:", "4mbit")],
      [F("6mbit", prio="1:10"), F("6mbit", prio=7)]),
    S("htb unclassified goes direct", htb_root("0") + [htb_class("1:10", "1:", "2mbit")],
      [F("4mbit", prio="1:10"), F("3mbit", prio=5)]),
    # htb, two levels: borrowing between siblings
    two_siblings("htb siblings borrow by quantum (rate-proportional)", ("2mbit", "20mbit"), ("6mbit", "20mbit"),
                 [F("20mbit", prio="1:10"), F("20mbit", prio="1:20")]),
    two_siblings("htb siblings borrow, equal quantum", ("2mbit", "20mbit"), ("6mbit", "20mbit"),
                 [F("20mbit", prio="1:10"), F("20mbit", prio="1:20")], extra_a="quantum 1500",
                 extra_b="quantum 1500"),
    two_siblings("htb idle sibling's share borrowed", ("5mbit", "20mbit"), ("15mbit", "20mbit"),
                 [F("30mbit", prio="1:10")]),
    two_siblings("htb class held at its ceil", ("2mbit", "5mbit"), ("2mbit", "20mbit"),
                 [F("10mbit", prio="1:10")]),
    two_siblings("htb prio among borrowers", ("2mbit", "10mbit"), ("2mbit", "10mbit"),
                 [F("10mbit", prio="1:10"), F("10mbit", prio="1:20")], parent_rate="10mbit",
                 extra_a="prio 0", extra_b="prio 1"),
    two_siblings("htb siblings at their rates (no excess)", ("4mbit", "4mbit"), ("6mbit", "6mbit"),
                 [F("8mbit", prio="1:10"), F("8mbit", prio="1:20")], parent_rate="10mbit"),
    two_siblings("htb sibling starts late", ("3mbit", "12mbit"), ("3mbit", "12mbit"),
                 [F("15mbit", prio="1:10"), F("15mbit", prio="1:20", start=1)], parent_rate="12mbit",
                 duration=3.0),
    two_siblings("htb sibling stops early", ("3mbit", "12mbit"), ("3mbit", "12mbit"),
                 [F("15mbit", prio="1:10"), F("15mbit", prio="1:20", stop=1)], parent_rate="12mbit",
                 duration=3.0),
    # htb, three levels
    S("htb three levels, all busy",
      htb_root() + [htb_class("1:1", "1:", "30mbit", "30mbit"), htb_class("1:10", "1:1", "10mbit", "30mbit"),
                    htb_class("1:101", "1:10", "5mbit", "30mbit"), htb_class("1:102", "1:10", "5mbit", "30mbit"),
                    htb_class("1:20", "1:1", "10mbit", "30mbit")],
      [F("20mbit", prio="1:101"), F("20mbit", prio="1:102"), F("20mbit", prio="1:20")],
      timing="two-level borrowing: the top level's excess follows the phase of the inner class's turns"),
    S("htb three levels, one leaf idle",
      htb_root() + [htb_class("1:1", "1:", "30mbit", "30mbit"), htb_class("1:10", "1:1", "10mbit", "30mbit"),
                    htb_class("1:101", "1:10", "5mbit", "30mbit"), htb_class("1:102", "1:10", "5mbit", "30mbit"),
                    htb_class("1:20", "1:1", "10mbit", "30mbit")],
      [F("25mbit", prio="1:101"), F("25mbit", prio="1:20")],
      timing="two-level borrowing: the top level's excess follows the phase of the inner class's turns"),
    S("htb three levels, inner ceil",
      htb_root() + [htb_class("1:1", "1:", "30mbit", "30mbit"), htb_class("1:10", "1:1", "5mbit", "8mbit"),
                    htb_class("1:101", "1:10", "2mbit", "30mbit"), htb_class("1:102", "1:10", "2mbit", "30mbit"),
                    htb_class("1:20", "1:1", "5mbit", "30mbit")],
      [F("20mbit", prio="1:101"), F("20mbit", prio="1:102"), F("4mbit", prio="1:20")]),
    # htb leaves of other kinds
    S("htb leaf pfifo limit 10", htb_root() + [htb_class("1:10", "1:", "5mbit"),
                                               "qdisc add dev {dev} parent 1:10 handle 10: pfifo limit 10"],
      [F("10mbit", prio="1:10")]),
    S("htb leaf bfifo 20kb", htb_root() + [htb_class("1:10", "1:", "5mbit"),
                                           "qdisc add dev {dev} parent 1:10 handle 10: bfifo limit 20kb"],
      [F("10mbit", prio="1:10")]),
    S("htb leaf pfifo_head_drop 10", htb_root() + [htb_class("1:10", "1:", "5mbit"),
                                                   "qdisc add dev {dev} parent 1:10 handle 10: pfifo_head_drop limit 10"],
      [F("10mbit", prio="1:10")]),
    # pfifo_fast: band strictness by TOS and by priority, behind a shaper
    # (the lower bands start once the higher ones have filled the queue: what a band gets before
    # then is the start's timing, not the qdisc's rule)
    under_tbf("pfifo_fast", [F("6mbit", tos="0x10"), F("6mbit", tos="0", start=0.1),
                             F("6mbit", tos="0x08", start=0.2)],
              name="pfifo_fast bands by TOS under tbf 10mbit"),
    under_tbf("pfifo_fast", [F("4mbit", prio=6), F("8mbit", prio=0, start=0.1), F("8mbit", prio=1, start=0.2)],
              name="pfifo_fast bands by priority under tbf 10mbit"),
    S("pfifo_fast root offered 50mbit (under)", [], [F("20mbit", tos="0x10"), F("30mbit")]),
    # fifos behind a shaper: limits and head drop
    under_tbf("pfifo limit 20", [F("20mbit")]),
    under_tbf("bfifo limit 30kb", [F("20mbit")]),
    under_tbf("pfifo_head_drop limit 20", [F("20mbit")]),
    S("pfifo root offered 100mbit (under)", ["qdisc add dev {dev} root handle 1: pfifo limit 1000"],
      [F("100mbit")]),
    # mq: a child of another kind on each TX queue, each flow on its own queue
    S("mq with tbf and htb children",
      ["qdisc add dev {dev} root handle 1: mq",
       "qdisc add dev {dev} parent 1:1 handle 10: tbf rate 10mbit burst 10kb limit 30kb",
       "qdisc add dev {dev} parent 1:2 handle 20: htb default 10",
       "class add dev {dev} parent 20: classid 20:10 htb rate 4mbit"],
      [F("20mbit", queue=0), F("10mbit", prio="20:10", queue=1)], queues=2),
    S("mq with pfifo and tbf children",
      ["qdisc add dev {dev} root handle 1: mq",
       "qdisc add dev {dev} parent 1:1 handle 10: pfifo limit 100",
       "qdisc add dev {dev} parent 1:2 handle 20: tbf rate 5mbit burst 10kb limit 20kb"],
      [F("8mbit", queue=0), F("10mbit", queue=1)], queues=2),
    # kinds this kernel may lack (prio, fq_codel, codel, red, fq): "not comparable here" where
    # `tc qdisc add` fails, compared where it succeeds
    under_tbf("prio bands 3", [F("6mbit", prio=0x10001), F("6mbit", prio=0x10002, start=0.1),
                               F("6mbit", prio=0x10003, start=0.2)], name="prio bands by class id under tbf 10mbit"),
    under_tbf("fq_codel limit 200", [F("20mbit")], name="fq_codel under tbf 10mbit"),
    under_tbf("codel limit 200", [F("20mbit")], name="codel under tbf 10mbit"),
    under_tbf("red limit 60000 min 10000 max 30000 avpkt 1000 burst 20 probability 0.02 bandwidth 10mbit",
              [F("20mbit")], name="red under tbf 10mbit"),
    S("fq flow pacing", ["qdisc add dev {dev} root handle 1: fq maxrate 5mbit"], [F("10mbit")]),
    # live changes, the same change at the same time on both sides
    S("live: htb class rate 2mbit -> 6mbit",
      htb_root() + [htb_class("1:10", "1:", "2mbit")], [F("10mbit", prio="1:10")], duration=3.0,
      changes=[(1.0, "class change dev {dev} parent 1: classid 1:10 htb rate 6mbit")]),
    S("live: tbf rate 10mbit -> 4mbit",
      ["qdisc add dev {dev} root handle 1: tbf rate 10mbit burst 20kb limit 60kb"], [F("20mbit")],
      duration=3.0, changes=[(1.0, "qdisc change dev {dev} root handle 1: tbf rate 4mbit burst 20kb limit 60kb")]),
    S("live: htb sibling ceil lowered",
      htb_root() + [htb_class("1:1", "1:", "20mbit", "20mbit"), htb_class("1:10", "1:1", "2mbit", "20mbit"),
                    htb_class("1:20", "1:1", "2mbit", "20mbit")],
      [F("20mbit", prio="1:10"), F("20mbit", prio="1:20")], duration=3.0,
      changes=[(1.0, "class change dev {dev} parent 1:1 classid 1:10 htb rate 2mbit ceil 4mbit")]),
    S("live: pfifo limit lowered under tbf",
      ["qdisc add dev {dev} root handle 1: tbf rate 10mbit burst 10kb limit 1mb",
       "qdisc add dev {dev} parent 1:1 handle 10: pfifo limit 100"], [F("20mbit")], duration=3.0,
      changes=[(1.0, "qdisc change dev {dev} parent 1:1 handle 10: pfifo limit 10")]),
]


class NotComparable(Exception):
    pass


class RunFailed(Exception):
    pass


def sh(args, check=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RunFailed(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return r


def cmd_words(cmd):
    return cmd.format(dev=DEV).split()


class Side:
    """One way of running a scenario's tree: the kernel's tc, or a txpath configuration."""

    def __init__(self, kind, txpath, tmp):
        self.kind, self.txpath, self.tmp = kind, txpath, tmp
        self.config = os.path.join(tmp, f"{kind}.tc")

    def install(self, sc):
        if self.kind == "kernel":
            sh(["tc", "qdisc", "del", "dev", DEV, "root"], check=False)
            if not sc["tc"]:
                sh(["tc", "qdisc", "add", "dev", DEV, "root", "pfifo_fast"])
            for c in sc["tc"]:
                r = sh(["tc"] + cmd_words(c), check=False)
                if r.returncode != 0:
                    if re.search(r"Unknown qdisc|Specified qdisc kind is unknown|not supported|"
                                 r"No such file", r.stderr):
                        raise NotComparable(f"tc: {r.stderr.strip()[:200]}")
                    raise RunFailed(f"tc {c.format(dev=DEV)}: {r.stderr.strip()[:300]}")
            if sc["queues"] > 1:
                set_xps(sc["queues"])
        else:
            if os.path.exists(self.config):
                os.unlink(self.config)
            sh([self.txpath, "tc", "--config", self.config, "link", "add", "dev", DEV]
               + (["numtxqueues", str(sc["queues"])] if sc["queues"] > 1 else []))
            for c in sc["tc"]:
                sh([self.txpath, "tc", "--config", self.config] + cmd_words(c))

    def change(self, cmd):
        if self.kind == "kernel":
            return sh(["tc"] + cmd_words(cmd), check=False)
        return sh([self.txpath, "tc", "--config", self.config] + cmd_words(cmd), check=False)

    def offer_args(self):
        if self.kind == "kernel":
            return ["--via", "kernel"]
        return ["--via", "txpath", "--tc-config", self.config, "--tc-dev", DEV]

    def drops(self, offer_json):
        """{'qdisc 1:': drops, 'class 1:10': drops} as tc -s reports them at the schedule's end."""
        out = {}
        if self.kind == "kernel":
            for q in json.loads(sh(["tc", "-s", "-j", "qdisc", "show", "dev", DEV]).stdout or "[]"):
                if q.get("handle") and not re.match(r"^[89a-f][0-9a-f]{3}:$", q["handle"]):
                    out["qdisc " + q["handle"]] = q.get("drops", 0)
            text = sh(["tc", "-s", "class", "show", "dev", DEV]).stdout
            for m in re.finditer(r"^class \S+ (\S+) .*?\n Sent \d+ bytes \d+ pkt \(dropped (\d+)",
                                 text, re.M):
                out["class " + m.group(1)] = int(m.group(2))
        else:
            tcj = offer_json.get("tc", {})
            for q in tcj.get("qdiscs", []):
                if q.get("handle") and q["handle"] != "0:":
                    out["qdisc " + q["handle"]] = q.get("drops", 0)
            for c in tcj.get("classes", []):
                out["class " + c["handle"]] = c.get("drops", 0)
        return out

    def clear(self):
        if self.kind == "kernel":
            sh(["tc", "qdisc", "del", "dev", DEV, "root"], check=False)


def set_xps(queues):
    """TX queue q sends from CPU q % CPUs alone (XPS): the kernel's queue for a flow with
    queue=q, whose sender `txpath offer` pins there (src/bench/offer.cpp)."""
    cpus = os.cpu_count() or 1
    for q in range(queues):
        path = f"/sys/class/net/{DEV}/queues/tx-{q}/xps_cpus"
        try:
            with open(path, "w") as f:
                f.write(format(1 << (q % cpus), "x"))
        except OSError as e:  # a kernel without XPS: the queue choice cannot be reproduced
            raise NotComparable(f"XPS cannot be set ({path}: {e.strerror})") from e


def wait_line(proc, text, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise RunFailed(f"{proc.args[1]} exited {proc.returncode}: {proc.stderr.read().strip()[:300]}")
            continue
        if text in line:
            return
    raise RunFailed(f"{proc.args[1]}: no {text!r} within {timeout} s")


def run_side(side, sc, duration, tmp, verbose):
    side.install(sc)
    sink_json, offer_json = os.path.join(tmp, "sink.json"), os.path.join(tmp, "offer.json")
    for f in (sink_json, offer_json):
        if os.path.exists(f):
            os.unlink(f)
    sink = subprocess.Popen([side.txpath, "sink", PEER, "--netns", NETNS, "--window-ms", str(WINDOW_MS),
                             "--curve", str(CURVE), "--json", sink_json],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    changes_done = []
    try:
        wait_line(sink, "counting", 10)
        offer = subprocess.Popen([side.txpath, "offer", "--device", "afpacket:" + DEV] + side.offer_args()
                                 + [a for f in sc["flows"] for a in ("--flow", f)]
                                 + ["--duration", str(duration), "--json", offer_json],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_line(offer, "schedule starts", 20)
        start = time.monotonic()
        for at, cmd in sorted((t * duration / sc["duration"], c) for t, c in sc["changes"]):
            time.sleep(max(0.0, start + at - time.monotonic()))
            r = side.change(cmd)
            changes_done.append((round(time.monotonic() - start, 3), r.returncode, r.stderr.strip()[:200]))
        out, err = offer.communicate(timeout=duration + 60)
        if offer.returncode != 0:
            raise RunFailed(f"txpath offer ({side.kind}): exit {offer.returncode}: {err.strip()[:300]}")
        with open(offer_json) as f:
            offered = json.load(f)
        drops = side.drops(offered)
        time.sleep(0.3)
    finally:
        sink.send_signal(signal.SIGINT)
        sink.communicate(timeout=30)
        side.clear()
    with open(sink_json) as f:
        received = json.load(f)
    for at, rc, err in changes_done:
        if rc != 0:
            raise RunFailed(f"live change at {at} s on {side.kind}: exit {rc}: {err}")
    if verbose:
        print(f"    {side.kind}: offered {[x['offered'] for x in offered['flows']]}, "
              f"late {offered['max_late_ns'] / 1e6:.2f} ms, changes at {[c[0] for c in changes_done]}")
    return {"offer": offered, "sink": received, "drops": drops, "changes": changes_done}


def flow_views(run, nflows):
    """Per flow: windows (bytes), curve, order figures, from the sink's report."""
    sink = run["sink"]
    by_id = {t["sender"]: t for t in sink.get("timelines", [])}
    counts = {s["sender"]: s for s in sink.get("senders", [])}
    views = []
    for i in range(nflows):
        t = by_id.get(i, {"windows": [], "curve": []})
        c = counts.get(i, {})
        views.append({"windows": [w[0] for w in t["windows"]], "curve": t["curve"],
                      "reordered": c.get("out_of_order", 0), "duplicated": c.get("duplicated", 0),
                      "received": c.get("received", 0)})
    return views


def burst_bytes(curve, rate_bytes):
    """Bytes that passed above the rate line: max over arrivals of (bytes by then - rate * t)."""
    best, total = 0.0, 0
    for t_ns, length in curve:
        total += length
        best = max(best, total - rate_bytes * t_ns / 1e9)
    return best


def compare(sc, duration, a, b):
    """The differences between runs a (kernel) and b, as lines; and the side-by-side figures."""
    diffs, figures = [], []
    nflows = len(sc["flows"])
    fa, fb = flow_views(a, nflows), flow_views(b, nflows)
    nwin = int(duration * 1000 // WINDOW_MS)
    change_windows = {int(at * 1000 // WINDOW_MS) for at, _, _ in a["changes"] + b["changes"]}
    for i in range(nflows):
        size = int(re.search(r"size=(\d+)", sc["flows"][i]).group(1))
        for w in range(nwin):
            if w in change_windows:
                continue
            ka = fa[i]["windows"][w] if w < len(fa[i]["windows"]) else 0
            kb = fb[i]["windows"][w] if w < len(fb[i]["windows"]) else 0
            figures.append((f"flow {i} window {w} bytes", ka, kb))
            if abs(ka - kb) > RATE_TOL * max(ka, kb) + size:
                diffs.append(f"flow {i} window {w}: {ka} vs {kb} bytes "
                             f"({kb / ka if ka else float('inf'):.3f}x)")
        for key in ("reordered", "duplicated"):
            if fa[i][key] != 0 or fb[i][key] != 0:
                diffs.append(f"flow {i} {key}: {fa[i][key]} vs {fb[i][key]}")
    for key in sorted(set(a["drops"]) | set(b["drops"])):
        if key not in a["drops"] or key not in b["drops"]:
            continue  # a qdisc only one side names (the kernel's own default children)
        da, db = a["drops"][key], b["drops"][key]
        figures.append((f"{key} drops", da, db))
        if abs(da - db) > DROP_TOL * max(da, db) + 1:
            diffs.append(f"{key} drops: {da} vs {db}")
    if sc["burst"]:
        ba = burst_bytes(fa[0]["curve"], rate_bytes(sc["burst"]))
        bb = burst_bytes(fb[0]["curve"], rate_bytes(sc["burst"]))
        figures.append(("burst bytes", round(ba), round(bb)))
        if abs(ba - bb) > BURST_TOL:
            diffs.append(f"burst: {ba:.0f} vs {bb:.0f} bytes")
    return diffs, figures


BEDS = {}  # TX queues -> (host end, peer end, netns, subnet A.B.C): set by main()


def use_bed(queues):
    global DEV, PEER, NETNS
    DEV, PEER, NETNS, _ = BEDS[queues]


def testbed(txpath, up):
    for queues, (dev, peer, netns, subnet) in BEDS.items():
        if up:
            sh([txpath, "testbed", "up", "--host-if", dev, "--peer-if", peer, "--netns", netns,
                "--host-addr", subnet + ".1/24", "--peer-addr", subnet + ".2/24", "--queues", str(queues)])
        else:
            sh([txpath, "testbed", "down", "--host-if", dev, "--netns", netns], check=False)


def summary_row(name, verdict, figs):
    tot = [(k, x, y) for k, x, y in figs if "window" in k]
    ka, kb = sum(x for _, x, _ in tot), sum(y for _, _, y in tot)
    da = sum(x for k, x, _ in figs if k.endswith("drops") and k.startswith("qdisc"))
    db = sum(y for k, _, y in figs if k.endswith("drops") and k.startswith("qdisc"))
    return {"scenario": name, "verdict": verdict, "kernel_bytes": ka, "other_bytes": kb,
            "bytes_ratio": round(kb / ka, 4) if ka else None, "kernel_drops": da, "other_drops": db}


def main():
    global DEV, PEER, NETNS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--txpath", default=shutil.which("txpath") or "build-release/txpath")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--dev", default=DEV, help="the testbed's host end (made and removed here)")
    ap.add_argument("--peer", default=PEER)
    ap.add_argument("--netns", default=NETNS)
    ap.add_argument("--subnet", default="10.79.0", help="the testbed's /24, as A.B.C")
    args = ap.parse_args()
    a, b, c = args.subnet.split(".")
    BEDS[1] = (args.dev, args.peer, args.netns, args.subnet)
    if any(sc["queues"] > 1 for sc in SCENARIOS if args.only in sc["name"]):
        BEDS[2] = (args.dev + "q", args.peer + "q", args.netns + "-mq", f"{a}.{b}.{(int(c) + 1) % 256}")
    chosen = [s for s in SCENARIOS if args.only in s["name"]]
    if args.list:
        for s in chosen:
            print(s["name"])
        print(f"{len(chosen)} scenarios")
        return 0
    if os.geteuid() != 0 or not shutil.which("tc") or not shutil.which("ip"):
        print("qdisc_conform: skipped: needs root, tc and ip", file=sys.stderr)
        return 77
    txpath = os.path.abspath(args.txpath)
    if not os.access(txpath, os.X_OK):
        print(f"qdisc_conform: no txpath binary at {txpath!r}", file=sys.stderr)
        return 2
    scale = 3 if args.full else 1
    rows, equal, different, skipped, failed, unreproducible, timing_diffs = [], 0, 0, 0, 0, 0, 0
    with tempfile.TemporaryDirectory(prefix="txpath-conform.") as tmp:
        testbed(txpath, True)
        try:
            kernel = Side("kernel", txpath, tmp)
            other = Side("kernel" if args.self_test else "txpath", txpath, tmp)
            for sc in chosen:
                use_bed(sc["queues"])
                duration = sc["duration"] * scale
                try:
                    a = run_side(kernel, sc, duration, tmp, args.verbose)
                    b = run_side(other, sc, duration, tmp, args.verbose)
                    diffs, figs = compare(sc, duration, a, b)
                    kernel_diffs = []
                    if diffs:
                        # Is the difference the other side's? Only if the kernel reproduces itself.
                        a2 = run_side(kernel, sc, duration, tmp, args.verbose)
                        kernel_diffs, _ = compare(sc, duration, a, a2)
                        again, figs2 = compare(sc, duration, a2, b)
                        if not again:
                            diffs, figs = [], figs2
                        elif not kernel_diffs:
                            # The kernel reproduces itself: does the difference? (A run that a
                            # loaded machine disturbed does not come back.)
                            b2 = run_side(other, sc, duration, tmp, args.verbose)
                            for k in (a, a2):
                                d2, f2 = compare(sc, duration, k, b2)
                                if not d2:
                                    diffs, figs = [], f2
                                    break
                except NotComparable as e:
                    skipped += 1
                    rows.append({"scenario": sc["name"], "verdict": "not comparable here", "why": str(e)})
                    print(f"SKIP  {sc['name']}: not comparable here ({e})")
                    continue
                except (RunFailed, subprocess.TimeoutExpired, OSError, ValueError) as e:
                    failed += 1
                    rows.append({"scenario": sc["name"], "verdict": "failed", "why": str(e)})
                    print(f"FAIL  {sc['name']}: the run failed: {e}")
                    continue
                unstable = bool(diffs and kernel_diffs)
                documented = bool(diffs and not unstable and sc["timing"])
                verdict = ("equal" if not diffs else "kernel not reproducible" if unstable
                           else "differs: timing (docs/conformance.md)" if documented else "different")
                row = summary_row(sc["name"], verdict, figs)
                row["differences"], row["figures"], row["kernel_differences"] = diffs, figs, kernel_diffs
                rows.append(row)
                if unstable:
                    unreproducible += 1
                    print(f"KVAR  {sc['name']}: the kernel differs from itself here, so no verdict:")
                    for d in kernel_diffs:
                        print(f"        kernel run 1 vs 2: {d}")
                    for d in diffs:
                        print(f"        kernel vs {other.kind}: {d}")
                    continue
                ratio = f"{row['bytes_ratio']:.3f}" if row["bytes_ratio"] is not None else "-"
                print(f"{'OK   ' if not diffs else 'TIME ' if documented else 'DIFF '} {sc['name']}: bytes {row['kernel_bytes']} vs "
                      f"{row['other_bytes']} ({ratio}x), drops {row['kernel_drops']} vs {row['other_drops']}")
                for d in diffs:
                    print(f"        {d}")
                if args.verbose:
                    for k, x, y in figs:
                        print(f"        {k}: {x} / {y}")
                if documented:
                    timing_diffs += 1
                elif diffs:
                    different += 1
                else:
                    equal += 1
        finally:
            testbed(txpath, False)
    comparable = equal + different + timing_diffs
    print(f"{len(chosen)} scenarios: {comparable} comparable here, {equal} equal, {different} different, "
          f"{timing_diffs} different by timing (documented), "
          f"{unreproducible} where the kernel did not reproduce itself, {skipped} not comparable, {failed} failed" + (" (self-test: kernel against kernel)" if args.self_test else ""))
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump({"self_test": args.self_test, "full": args.full, "scenarios": rows}, f, indent=1)
        os.replace(args.json + ".tmp", args.json)
    if args.markdown:
        write_markdown(args.markdown, rows, args,
                       f"{len(chosen)} scenarios, {comparable} comparable here, {equal} equal, "
                       f"{different} different, {timing_diffs} different by timing (documented), {unreproducible} where the kernel did not reproduce itself, "
                       f"{skipped} not comparable here")
    if failed:
        return 2
    return 1 if different else 0


MARK_OPEN, MARK_CLOSE = "<!-- qdisc-conform -->", "<!-- /qdisc-conform -->"


def write_markdown(path, rows, args, counts):
    """The summary table. A FILE that has the markers (README.md) gets it between them, the rest
    of the file unchanged; any other FILE is replaced by the table alone. Atomic either way."""
    other = "kernel (again)" if args.self_test else "txpath"
    cmd = "scripts/qdisc_conform.py" + (" --full" if args.full else "") + (" --self-test" if args.self_test else "")
    cmd += f" --markdown {os.path.basename(path)}"
    lines = [f"Command: `{cmd}` (as root). {counts}. Bytes: every flow's bytes over the compared "
             "1 s windows, summed; drops: the qdiscs' own (`tc -s`, `txpath tc -s`).", "",
             f"| scenario | kernel bytes | {other} bytes | ratio | kernel drops | {other} drops | verdict |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "kernel_bytes" not in r:
            lines.append(f"| {r['scenario']} | | | | | | {r['verdict']} |")
            continue
        ratio = f"{r['bytes_ratio']:.3f}" if r["bytes_ratio"] is not None else "-"
        lines.append(f"| {r['scenario']} | {r['kernel_bytes']} | {r['other_bytes']} | {ratio} | "
                     f"{r['kernel_drops']} | {r['other_drops']} | {r['verdict']} |")
    table = "\n".join(lines) + "\n"
    text = table
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if MARK_OPEN in old and MARK_CLOSE in old:
            head, rest = old.split(MARK_OPEN, 1)
            _, tail = rest.split(MARK_CLOSE, 1)
            text = head + MARK_OPEN + "\n" + table + MARK_CLOSE + tail
    if os.path.islink(path):
        raise SystemExit(f"qdisc_conform: {path!r} is a symlink: not replaced")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
