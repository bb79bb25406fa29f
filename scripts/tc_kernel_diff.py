#!/usr/bin/env python3
"""`txpath tc` against the running kernel's own tc: what the show commands print.

Each case is a device (its txqueuelen) and a list of tc commands. The commands go to an ifb
device in a network namespace of this script's own with the machine's `tc`, and to a scratch
`txpath tc` configuration with the same device; then the views of the device (qdisc show and
class show, with -s, -j and -d) and the `Warning:` lines the commands printed must be the same
text, byte for byte. The counters are all zero on both sides (an ifb device in a fresh namespace
sees no traffic), so nothing is masked. JSON is compared after folding a key tc repeats within
one object (see normal_json).

`tc -j class show` is not compared: the iproute2 6.1 that Debian 12 ships prints class options
as text even with -j (docs/background.md, "What tc prints").

usage: tc_kernel_diff.py --txpath BIN [--netns NAME] [--only SUBSTRING] [--verbose]
                         [--random N [--seed S]]
Exit status: 0 when every case agrees, 1 when one differs, 77 when the check cannot run here (not
root, no ip or tc, no ifb). Prints one line per differing case and the agreement rate.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

DEV = "ifb0"

# (name, txqueuelen, commands). Every qdisc gets an explicit handle: the kernel makes one up
# for a qdisc added without one, txpath does not.
CASES = [
    ("pfifo_fast default", 1000, []),
    ("pfifo default limit", 1000, ["qdisc add dev ifb0 root handle 1: pfifo"]),
    ("pfifo limit 10", 1000, ["qdisc add dev ifb0 root handle 1: pfifo limit 10"]),
    ("pfifo txqueuelen 1", 1, ["qdisc add dev ifb0 root handle 1: pfifo"]),
    ("pfifo_head_drop", 1000, ["qdisc add dev ifb0 root handle 2: pfifo_head_drop limit 77"]),
    ("bfifo 65535", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 65535"]),
    ("bfifo 4294967295", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 4294967295"]),
    ("bfifo 1000", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 1000"]),
    ("bfifo 1025", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 1025"]),
    ("bfifo 1040", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 1040"]),
    ("bfifo 1048000", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 1048000"]),
    ("bfifo 3m", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 3mb"]),
    ("bfifo default", 1000, ["qdisc add dev ifb0 root handle 1: bfifo"]),
    ("bfifo default txqueuelen 7", 7, ["qdisc add dev ifb0 root handle 1: bfifo"]),
    ("tbf 2gbit 64kb", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 2gbit burst 64kb limit 1mb"]),
    ("tbf 1mbit latency", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 1mbit burst 10kb latency 50ms"]),
    ("tbf 1mbit latency 1ms", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 1mbit burst 5kb latency 1ms"]),
    ("tbf 10kbit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 10kbit burst 1600 limit 3000"]),
    ("tbf 100mbit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 100mbit burst 100k latency 10ms"]),
    ("tbf 10gbit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 10gbit burst 1mb latency 2ms"]),
    ("tbf 3mbit odd burst", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 3mbit burst 7777 limit 20000"]),
    ("tbf limit below burst", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 8mbit burst 20kb limit 1000"]),
    ("tbf peakrate", 1000,
     ["qdisc add dev ifb0 root handle 1: tbf rate 1mbit burst 10kb latency 70ms peakrate 2mbit mtu 1600"]),
    ("tbf peakrate limit", 1000,
     ["qdisc add dev ifb0 root handle 1: tbf rate 5mbit burst 32kb limit 100kb peakrate 20mbit mtu 2kb"]),
    ("tbf mpu overhead", 1000,
     ["qdisc add dev ifb0 root handle 1: tbf rate 1mbit burst 10kb limit 30kb mpu 64 overhead 20"]),
    ("tbf atm", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 2mbit burst 8kb latency 20ms linklayer atm"]),
    ("tbf class", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 1mbit burst 10kb limit 20kb"]),
    ("tbf child", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 1mbit burst 10kb limit 20kb",
                         "qdisc add dev ifb0 parent 1:1 handle 10: pfifo limit 5"]),
    ("htb empty", 1000, ["qdisc add dev ifb0 root handle 1: htb"]),
    ("htb txqueuelen 1", 1, ["qdisc add dev ifb0 root handle 1: htb default 10"]),
    ("htb r2q direct_qlen", 1000, ["qdisc add dev ifb0 root handle 1: htb r2q 5 direct_qlen 33 default 1a"]),
    ("htb 3mbit", 1000, ["qdisc add dev ifb0 root handle 1: htb default 10",
                         "class add dev ifb0 parent 1: classid 1:10 htb rate 3mbit"]),
    ("htb tree", 1000, ["qdisc add dev ifb0 root handle 1: htb default 10",
                        "class add dev ifb0 parent 1: classid 1:1 htb rate 100mbit",
                        "class add dev ifb0 parent 1:1 classid 1:10 htb rate 3mbit ceil 100mbit",
                        "class add dev ifb0 parent 1:1 classid 1:20 htb rate 900mbit prio 3"]),
    ("htb overhead atm", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                                "class add dev ifb0 parent 1: classid 1:1 htb rate 100mbit overhead 20 linklayer atm",
                                "class add dev ifb0 parent 1:1 classid 1:2 htb rate 10mbit overhead 4"]),
    ("htb bursts", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                          "class add dev ifb0 parent 1: classid 1:5 htb rate 1mbit ceil 2mbit burst 15k cburst 3000",
                          "class add dev ifb0 parent 1: classid 1:6 htb rate 64kbit burst 1k",
                          "class add dev ifb0 parent 1: classid 1:7 htb rate 40gbit ceil 40gbit"]),
    ("htb quantum", 1000, ["qdisc add dev ifb0 root handle 1: htb r2q 1",
                           "class add dev ifb0 parent 1: classid 1:1 htb rate 8kbit",
                           "class add dev ifb0 parent 1: classid 1:2 htb rate 1mbit quantum 1500",
                           "class add dev ifb0 parent 1: classid 1:3 htb rate 10mbit"]),
    ("htb mtu mpu", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                           "class add dev ifb0 parent 1: classid 1:1 htb rate 5mbit mtu 9000 mpu 64"]),
    ("htb many classes", 1000, ["qdisc add dev ifb0 root handle 1: htb default 3"] +
     ["class add dev ifb0 parent 1: classid 1:%x htb rate %dkbit" % (m, 100 * m) for m in range(1, 12)]),
    ("htb deep", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                        "class add dev ifb0 parent 1: classid 1:1 htb rate 50mbit",
                        "class add dev ifb0 parent 1:1 classid 1:2 htb rate 20mbit",
                        "class add dev ifb0 parent 1:2 classid 1:3 htb rate 5mbit prio 2",
                        "class add dev ifb0 parent 1:1 classid 1:4 htb rate 20mbit"]),
    ("htb leaf qdisc", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                              "class add dev ifb0 parent 1: classid 1:1 htb rate 50mbit",
                              "qdisc add dev ifb0 parent 1:1 handle 10: bfifo limit 30000"]),
    ("htb class change", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                                "class add dev ifb0 parent 1: classid 1:1 htb rate 50mbit",
                                "class change dev ifb0 parent 1: classid 1:1 htb rate 7mbit ceil 9mbit burst 4k"]),
    ("htb quantum small", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                                 "class add dev ifb0 parent 1: classid 1:a htb rate 8kbit",
                                 "class add dev ifb0 parent 1: classid 1:b htb rate 80kbit",
                                 "class change dev ifb0 classid 1:a htb rate 10mbit"]),
    ("htb inner change", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                                "class add dev ifb0 parent 1: classid 1:1 htb rate 1mbit quantum 3000",
                                "class add dev ifb0 parent 1:1 classid 1:2 htb rate 1mbit",
                                "class change dev ifb0 classid 1:1 htb rate 90mbit"]),
    ("htb delete class", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                                "class add dev ifb0 parent 1: classid 1:1 htb rate 1mbit",
                                "class add dev ifb0 parent 1:1 classid 1:2 htb rate 1mbit",
                                "class add dev ifb0 parent 1:1 classid 1:3 htb rate 2mbit",
                                "class del dev ifb0 classid 1:2"]),
    ("htb tc wraps", 1000, ["qdisc add dev ifb0 root handle 1: htb",
                            "class add dev ifb0 parent 1: classid 1:2 htb rate 8bit burst 1gb",
                            "class add dev ifb0 parent 1: classid 1:3 htb rate 8bit burst 5mb",
                            "class add dev ifb0 parent 1: classid 1:4 htb rate 8bit burst 4000"]),
    ("htb 14 classes", 1000, ["qdisc add dev ifb0 root handle 1: htb default 3"] +
     ["class add dev ifb0 parent 1: classid 1:%x htb rate %dmbit" % (m, m) for m in (0x40, 0x2, 0x21, 0x100,
      0x7, 0x33, 0xff, 0x1, 0x8, 0x80, 0x4, 0x12, 0xabc, 0x5)]),
    ("htb big rates", 1000, ["qdisc add dev ifb0 root handle 1: htb r2q 100",
                             "class add dev ifb0 parent 1: classid 1:1 htb rate 25gbit ceil 100gbit burst 1mb cburst 2mb",
                             "class add dev ifb0 parent 1:1 classid 1:2 htb rate 1gbit ceil 40gbit prio 7"]),
    ("htb child with prio 5", 1000, ["qdisc add dev ifb0 root handle 7: htb default 2",
                                     "class add dev ifb0 parent 7: classid 7:1 htb rate 300kbit ceil 1mbit prio 5",
                                     "qdisc add dev ifb0 parent 7:1 handle 70: pfifo limit 9"]),
    ("tbf 64kbit latency", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 64kbit burst 3000 latency 300ms"]),
    ("tbf 1gbit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 1gbit burst 125k latency 1ms"]),
    ("tbf 5mbit limit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 5mbit burst 2k limit 1514"]),
    ("tbf 777kbit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 777kbit burst 3333 latency 33ms mpu 100"]),
    ("tbf atm overhead peak", 1000,
     ["qdisc add dev ifb0 root handle 1: tbf rate 3mbit burst 6k latency 10ms peakrate 9mbit mtu 1600 "
      "linklayer adsl overhead 10"]),
    ("tbf lat 998us", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 777kbit burst 10k latency 1ms"]),
    ("tbf lat 970us", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 33kbit burst 2k latency 1ms"]),
    ("tbf 7mbit odd", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 7mbit burst 3333 latency 1ms"]),
    ("tbf peak bucket of 0 ticks", 1000,
     ["qdisc add dev ifb0 root handle 1: tbf rate 50gbit burst 100k limit 1mb peakrate 100gbit mtu 64"]),
    ("htb leaf tbf", 1000, ["qdisc add dev ifb0 root handle 1: htb default 1",
                            "class add dev ifb0 parent 1: classid 1:1 htb rate 10mbit",
                            "qdisc add dev ifb0 parent 1:1 handle 2: tbf rate 1mbit burst 2k limit 10k",
                            "qdisc add dev ifb0 parent 2:1 handle 3: bfifo limit 1039"]),
    ("tbf below tbf", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 10mbit burst 20k latency 5ms",
                             "qdisc add dev ifb0 parent 1:1 handle 2: tbf rate 3mbit burst 3k latency 7ms "
                             "peakrate 5mbit mtu 1514"]),
    ("pfifo_head_drop default", 50, ["qdisc add dev ifb0 root handle 3: pfifo_head_drop"]),
    ("bfifo 2g", 1000, ["qdisc add dev ifb0 root handle 1: bfifo limit 2gb"]),
    ("tbf 1.5kbit tiny", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 1500bit burst 100 limit 100"]),
    ("tbf 100gbit", 1000, ["qdisc add dev ifb0 root handle 1: tbf rate 100gbit burst 64kb limit 1mb"]),
]

# Views a case leaves out, and why (docs/background.md): a class changed in place keeps its token
# levels in the kernel; a configuration replays it as a new class with full buckets.
KNOWN = {
    "htb class change": {"-s class show dev ifb0", "-s -d class show dev ifb0"},
    "htb quantum small": {"-s class show dev ifb0", "-s -d class show dev ifb0"},
    "htb inner change": {"-s class show dev ifb0", "-s -d class show dev ifb0"},
}

def random_cases(count, seed):
    """`count` configurations drawn from `seed`: tbf, htb with classes and bfifo, with rates,
    bursts and limits over many magnitudes (--random)."""
    rng = random.Random(seed)
    rate = lambda: "%d%s" % (rng.choice([1, 3, 7, 10, 33, 64, 100, 250, 512, 777, 999]),
                             rng.choice(["kbit", "mbit", "gbit"]))
    size = lambda: "%d%s" % (rng.randint(1, 4000), rng.choice(["", "", "k", "kb"]))
    cases = []
    for i in range(count):
        kind = rng.choice(["tbf", "htb", "htb", "bfifo"])
        if kind == "bfifo":
            cmds = ["qdisc add dev ifb0 root handle 1: bfifo limit %d" % rng.randint(0, 1 << 32 - 1)]
        elif kind == "tbf":
            bound = rng.choice(["limit %s" % size(), "latency %dms" % rng.randint(1, 500),
                                "latency %dus" % rng.randint(1, 5000)])
            extra = rng.choice(["", "mpu 64", "overhead 14", "linklayer atm", ""])
            cmds = ["qdisc add dev ifb0 root handle 1: tbf rate %s burst %s %s %s" % (rate(), size(), bound, extra)]
        else:
            cmds = ["qdisc add dev ifb0 root handle 1: htb r2q %d" % rng.choice([1, 5, 10, 100])]
            minors = rng.sample(range(1, 300), rng.randint(1, 9))
            for n, m in enumerate(minors):
                parent = "1:%x" % minors[rng.randrange(n)] if n and rng.random() < 0.4 else "1:"
                opts = "rate %s" % rate()
                if rng.random() < 0.5:
                    opts += " ceil %s" % rate()
                if rng.random() < 0.5:
                    opts += " burst %s cburst %s" % (size(), size())
                if rng.random() < 0.3:
                    opts += " prio %d" % rng.randint(0, 7)
                if rng.random() < 0.2:
                    opts += " overhead %d linklayer %s" % (rng.randint(0, 60), rng.choice(["atm", "ethernet"]))
                cmds.append("class add dev ifb0 parent %s classid 1:%x htb %s" % (parent, m, opts))
        cases.append(("random %d" % i, rng.choice([1, 10, 1000]), cmds))
    return cases


SHOWS = [
    ["qdisc", "show", "dev", DEV],
    ["-s", "qdisc", "show", "dev", DEV],
    ["-j", "qdisc", "show", "dev", DEV],
    ["-s", "-j", "qdisc", "show", "dev", DEV],
    ["-d", "qdisc", "show", "dev", DEV],
    ["-d", "-j", "qdisc", "show", "dev", DEV],
    ["-s", "-d", "qdisc", "show", "dev", DEV],
    ["class", "show", "dev", DEV],
    ["-s", "class", "show", "dev", DEV],
    ["-d", "class", "show", "dev", DEV],
    ["-s", "-d", "class", "show", "dev", DEV],
]


def dedup_pairs(pairs):
    """A JSON object's keys in order, a repeated key once (at its first place, its last value)."""
    out = {}
    for k, v in pairs:
        out[k] = v
    return out


def normal_json(text):
    """tc -d -j prints tbf's "mpu" twice in one object (for the rate and the peak rate); txpath
    prints it once. Compared as parsed with the repeats folded, key order kept."""
    try:
        return json.dumps(json.loads(text, object_pairs_hook=dedup_pairs))
    except ValueError:
        return text


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def warnings(stderr):
    return [l for l in stderr.splitlines() if l.startswith("Warning:")]


class Kernel:
    def __init__(self, ns):
        self.ns = ns

    def setup(self, txqueuelen):
        run(["ip", "-n", self.ns, "link", "del", DEV])
        rc, _, err = run(["ip", "-n", self.ns, "link", "add", DEV, "type", "ifb"])
        if rc != 0:
            raise RuntimeError("cannot add an ifb device: " + err.strip())
        run(["ip", "-n", self.ns, "link", "set", DEV, "txqueuelen", str(txqueuelen), "up"])

    def tc(self, args):
        return run(["tc", "-n", self.ns] + args)


class Txpath:
    def __init__(self, binary, directory):
        self.binary = binary
        self.conf = os.path.join(directory, "txpath.tc")

    def setup(self, txqueuelen):
        if os.path.exists(self.conf):
            os.unlink(self.conf)
        run([self.binary, "tc", "--config", self.conf, "link", "add", "dev", DEV,
             "txqueuelen", str(txqueuelen), "mtu", "1500"])

    def tc(self, args):
        return run([self.binary, "tc", "--config", self.conf] + args)


def views(side, commands):
    out = {}
    warned = []
    for c in commands:
        rc, _, err = side.tc(c.split())
        out["exit of " + c] = str(rc)
        warned += warnings(err)
    out["warnings"] = "\n".join(warned)
    for s in SHOWS:
        text = side.tc(s)[1]
        out[" ".join(s)] = normal_json(text) if "-j" in s else text
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--txpath", required=True)
    ap.add_argument("--netns", default="h_tcdiff%d" % os.getpid())
    ap.add_argument("--only", default="")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--random", type=int, default=0, help="also N random configurations")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: comparing with the kernel's tc needs root")
        return 77
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            print("SKIP: %s is not installed" % tool)
            return 77
    if run(["ip", "netns", "add", a.netns])[0] != 0:
        print("SKIP: cannot make network namespace %s" % a.netns)
        return 77
    # No IPv6: its router solicitations would be counted by the device's default qdisc.
    for conf in ("all", "default"):
        run(["ip", "netns", "exec", a.netns, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % conf])
    kernel = Kernel(a.netns)
    try:
        with tempfile.TemporaryDirectory() as d:
            txpath = Txpath(os.path.abspath(a.txpath), d)
            try:
                kernel.setup(1000)
            except RuntimeError as e:
                print("SKIP: %s" % e)
                return 77
            agree = total = 0
            for name, qlen, commands in CASES + random_cases(a.random, a.seed):
                if a.only not in name:
                    continue
                total += 1
                kernel.setup(qlen)
                txpath.setup(qlen)
                k = views(kernel, commands)
                t = views(txpath, commands)
                bad = [key for key in k if k[key] != t.get(key) and key not in KNOWN.get(name, ())]
                if not bad:
                    agree += 1
                    continue
                print("DIFF %s: %s" % (name, ", ".join(bad)))
                if a.verbose:
                    for key in bad:
                        print("  [%s]\n  kernel: %r\n  txpath: %r" % (key, k[key], t.get(key)))
            print("agreement: %d of %d cases" % (agree, total))
            return 0 if agree == total else 1
    finally:
        run(["ip", "netns", "del", a.netns])


if __name__ == "__main__":
    sys.exit(main())
