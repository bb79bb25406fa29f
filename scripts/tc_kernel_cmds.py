#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs tc commands through the machine's real tc and through `txpath tc`, and compares them.

Each case of the case file is one line: setup commands and the command under test, separated by
" ; " (the last one is under test), in tc's syntax without the leading "tc"; $DEV names the
device. A case starting with "batch:" runs `tc -batch FILE` with the lines separated by " | " as
the file (after the setup commands before it, if any: "SETUP ; batch: L1 | L2"). '#' starts a
comment line. Words are split as a shell splits them (shlex), so "" is an empty word. A case
starting with "!N " is one where txpath deliberately differs from tc (each one is listed in
docs/tc-compatibility.md, "Deliberate differences from tc"): txpath must exit with N; tc is still run, not compared.

The real side runs in a network namespace of its own holding one ifb device; before every case
its root qdisc is deleted (its classes and children go with it). The txpath side gets a fresh
configuration file per case holding the same device (same txqueuelen and mtu). Every setup
command must succeed on both sides. The command under test must give the same exit status and,
when tc fails, txpath's first stderr line must begin with tc's first stderr line (txpath may add
detail after it on the same line; for a -batch case the line tc prints first).

Usage: tc_kernel_cmds.py --txpath BIN --cases FILE [--netns NAME] [--verbose]
Exit status: 0 when every case agrees, 1 when one does not, 77 when the comparison cannot run
(not root, no tc or ip, no ifb), 2 on bad usage.
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

DEV = "ifb0"


def run(argv, cwd=None):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, timeout=60)
    err = p.stderr.decode("utf-8", "backslashreplace")
    return p.returncode, err.splitlines()[0] if err.strip() else ""


def words(command):
    return [w.replace("$DEV", DEV) for w in shlex.split(command)]


class Kernel:
    """The real tc on an ifb device in a namespace of our own."""

    def __init__(self, netns):
        self.netns = netns
        subprocess.run(["ip", "netns", "del", netns], stderr=subprocess.DEVNULL)
        for argv in (["ip", "netns", "add", netns],
                     ["ip", "-n", netns, "link", "add", DEV, "type", "ifb"],
                     ["ip", "-n", netns, "link", "set", DEV, "up"]):
            if subprocess.run(argv, stderr=subprocess.DEVNULL).returncode != 0:
                self.close()
                raise RuntimeError("cannot set up an ifb device in a network namespace: " +
                                   " ".join(argv))

    def attribute(self, name):
        out = subprocess.run(["ip", "netns", "exec", self.netns, "cat",
                              "/sys/class/net/%s/%s" % (DEV, name)],
                             stdout=subprocess.PIPE, check=True).stdout
        return int(out.decode())

    def reset(self):
        subprocess.run(["ip", "netns", "exec", self.netns, "tc", "qdisc", "del", "dev", DEV,
                        "root"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def tc(self, argv):
        return run(["ip", "netns", "exec", self.netns, "tc"] + argv)

    def close(self):
        subprocess.run(["ip", "netns", "del", self.netns], stderr=subprocess.DEVNULL)


class Txpath:
    """`txpath tc` on a scratch configuration holding the same device."""

    def __init__(self, binary, tmp, txqueuelen, mtu):
        self.binary, self.tmp = binary, tmp
        self.link = ["link", "add", "dev", DEV, "txqueuelen", str(txqueuelen), "mtu", str(mtu)]
        self.config = os.path.join(tmp, "txpath.tc")

    def reset(self):
        if os.path.exists(self.config):
            os.unlink(self.config)
        rc, err = self.tc(self.link)
        if rc != 0:
            raise RuntimeError("txpath tc %s: exit %d: %s" % (" ".join(self.link), rc, err))

    def tc(self, argv):
        return run([self.binary, "tc", "--config", self.config] + argv, cwd=self.tmp)


def parse_case(line, tmp):
    """(setup argvs, argv under test) of one case line; a batch case's file is written here."""
    parts = [p.strip() for p in line.split(" ; ")]
    setup = [words(p) for p in parts[:-1]]
    last = parts[-1]
    if last.startswith("batch:"):
        path = os.path.join(tmp, "batch")
        with open(path, "w") as f:
            for l in last[len("batch:"):].split(" | "):
                f.write(l.strip().replace("$DEV", DEV) + "\n")
        return setup, ["-batch", path]
    return setup, words(last)


def run_case(side, setup, argv):
    side.reset()
    for s in setup:
        rc, err = side.tc(s)
        if rc != 0:
            return "setup `%s` failed: exit %d: %s" % (" ".join(s), rc, err), None
    return None, side.tc(argv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--txpath", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--netns", default="txtc%d" % os.getpid())
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: comparing with the kernel's tc needs root")
        return 77
    for tool in ("ip", "tc"):
        if subprocess.run(["sh", "-c", "command -v " + tool], stdout=subprocess.DEVNULL).returncode:
            print("SKIP: %s is not installed" % tool)
            return 77
    with open(args.cases) as f:
        cases = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    try:
        kernel = Kernel(args.netns)
    except RuntimeError as e:
        print("SKIP: %s" % e)
        return 77
    failed = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            txpath = Txpath(os.path.abspath(args.txpath), tmp, kernel.attribute("tx_queue_len"),
                            kernel.attribute("mtu"))
            for case in cases:
                deliberate = None
                if case.startswith("!"):
                    status, case = case[1:].split(" ", 1)
                    deliberate = int(status)
                problems = []
                results = []
                for side in (kernel, txpath):
                    setup, argv = parse_case(case, tmp)
                    why, result = run_case(side, setup, argv)
                    if why:
                        problems.append(("tc" if side is kernel else "txpath") + ": " + why)
                    results.append(result)
                (krc, kerr), (trc, terr) = results if not problems else ((0, ""), (0, ""))
                if not problems and deliberate is not None:
                    if trc != deliberate:
                        problems.append("exit %d, txpath should exit %d here" % (trc, deliberate))
                elif not problems and krc != trc:
                    problems.append("exit %d, tc exits %d" % (trc, krc))
                if not problems and deliberate is None and krc != 0 and not terr.startswith(kerr):
                    problems.append("first stderr line %r, tc's is %r" % (terr, kerr))
                if problems:
                    failed += 1
                    print("FAIL: %s\n      %s" % (case, "\n      ".join(problems)))
                elif args.verbose:
                    print("ok:   %s -> %d %s" % (case, krc, kerr))
    finally:
        kernel.close()
    print("%d of %d cases agree with the kernel's tc" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
