#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the Linux tc-testing (tdc) qdisc cases against `txpath tc`.

The case files are the kernel's own: the directory tools/testing/selftests/tc-testing/tc-tests/
qdiscs of a Linux source tree, given as --tdc-dir DIR or in $TXPATH_TDC_DIR, read at run time;
nothing of them is copied into this repository. Each case gets a fresh
scratch configuration file (TXPATH_TC), with
    $TC    -> "<txpath> tc"            (tc itself)
    $IP    -> "<txpath> tc"            ("$IP link add dev X type dummy" adds a device to the file)
    $DUMMY -> dummy1, $DEV0 -> v0p0, $DEV1 -> v0p1
and nsPlugin's part (a netns holding $DUMMY and $DEV1) is played by adding those two devices
first. A netdevsim device ('echo "ID PORTS [QUEUES]" > /sys/bus/netdevsim/new_device', whose
port is $ETH) becomes "link add dev $ETH numtxqueues QUEUES" (1 when not given) in the scratch
configuration, and its del_device "link del dev $ETH". A case passes when cmdUnderTest exits with expExitCode and, if it did, verifyCmd's output
has exactly matchCount matches of matchPattern (Python re.findall, DOTALL | MULTILINE), as tdc
checks it. Skipped, with the reason: cases that need packets (scapyPlugin) and files of qdiscs
txpath does not implement.

Usage: tdc_run.py --txpath build/txpath [--tdc-dir DIR] [--min-pass 0.9] [--verbose] [FILE...]
Exit status: 0 if every implemented file passes at least --min-pass of its configuration-only
cases, 1 otherwise, 2 on bad usage (no case directory given, or not a directory: the message
says where the cases come from).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# The qdisc files txpath implements (the list); others are skipped with a reason.
IMPLEMENTED = {
    "fifo.json": "pfifo/bfifo",
    "pfifo_fast.json": "pfifo_fast",
    "prio.json": "prio",
    "tbf.json": "tbf",
    "fq_codel.json": "fq_codel",
    "htb.json": "htb",
    "fq.json": "fq",
    "mq.json": "mq",
    "codel.json": "codel",
    "red.json": "red",
}
NOT_IMPLEMENTED = {}
# Where the case files come from, for --help and for the error without them.
TDC_SOURCE = ("the qdisc cases of the kernel's tc-testing suite, "
              "tools/testing/selftests/tc-testing/tc-tests/qdiscs in a Linux source tree")
VARIABLES = {"DUMMY": "dummy1", "DEV0": "v0p0", "DEV1": "v0p1", "ETH": "eth0", "NS": "tcut"}


def requires(case):
    plugins = case.get("plugins", {})
    req = plugins.get("requires", []) if isinstance(plugins, dict) else []
    return [req] if isinstance(req, str) else list(req)


NETDEVSIM_NEW = re.compile(r'^\s*echo\s+"?\s*\d+\s+\d+(?:\s+(\d+))?\s*"?\s*>\s*/sys/bus/netdevsim/new_device\s*$')
NETDEVSIM_DEL = re.compile(r'^\s*echo\s+"?\s*\d+\s*"?\s*>\s*/sys/bus/netdevsim/del_device\s*$')


def netdevsim(cmd):
    """A netdevsim new_device / del_device line as the txpath tc link command it stands for."""
    m = NETDEVSIM_NEW.match(cmd)
    if m:
        return "$IP link add dev $ETH numtxqueues %s" % (m.group(1) or "1")
    if NETDEVSIM_DEL.match(cmd):
        return "$IP link del dev $ETH"
    return cmd


def expand(cmd, tc):
    cmd = netdevsim(cmd)
    def sub(m):
        name = m.group(1)
        if name in ("TC", "IP"):
            return tc
        return VARIABLES.get(name, m.group(0))
    return re.sub(r"\$([A-Z][A-Z0-9_]*)", sub, cmd)


def run_shell(cmd, env, timeout=30):
    try:
        p = subprocess.run(["/bin/sh", "-c", cmd], env=env, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"


def run_commands(cmds, tc, env, check):
    """Runs setup/teardown entries; an entry is a string or [cmd, allowed exit codes...]."""
    for entry in cmds:
        if isinstance(entry, list):
            cmd, allowed = entry[0], [int(x) for x in entry[1:]] or [0]
        else:
            cmd, allowed = entry, [0]
        rc, out, err = run_shell(expand(cmd, tc), env)
        if check and rc not in allowed:
            return "setup command failed (exit %d): %s: %s" % (rc, expand(cmd, tc), (err or out).strip())
    return None


def run_case(case, tc, workdir):
    conf = os.path.join(workdir, "txpath.tc")
    if os.path.exists(conf):
        os.unlink(conf)
    env = dict(os.environ, TXPATH_TC=conf)
    if "nsPlugin" in requires(case):
        for dev in (VARIABLES["DUMMY"], VARIABLES["DEV1"]):
            run_shell("%s link add dev %s type dummy" % (tc, dev), env)
    try:
        why = run_commands(case.get("setup", []), tc, env, check=True)
        if why:
            return False, why
        cmd = expand(case["cmdUnderTest"], tc)
        rc, out, err = run_shell(cmd, env)
        expected = int(case["expExitCode"])
        if rc != expected:
            return False, "exit %d, expected %d: %s: %s" % (rc, expected, cmd, (err or out).strip())
        verify = expand(case.get("verifyCmd", ""), tc)
        if verify:
            _, vout, _ = run_shell(verify, env)
            hits = len(re.findall(case["matchPattern"], vout, re.DOTALL | re.MULTILINE))
            want = int(case["matchCount"])
            if hits != want:
                return False, "%d matches of %r, expected %d; output of %s:\n%s" % (
                    hits, case["matchPattern"], want, verify, vout.rstrip())
        return True, ""
    finally:
        run_commands(case.get("teardown", []), tc, env, check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--txpath", required=True, help="the txpath binary")
    ap.add_argument("--tdc-dir", default=os.environ.get("TXPATH_TDC_DIR") or None,
                    help="directory of %s (default: $TXPATH_TDC_DIR)" % TDC_SOURCE)
    ap.add_argument("--min-pass", type=float, default=0.9)
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("files", nargs="*", help="case files (default: every *.json in --tdc-dir)")
    a = ap.parse_args()
    if not a.tdc_dir:
        print("tdc_run: no tdc case directory: give --tdc-dir DIR or set TXPATH_TDC_DIR to the "
              "directory of %s" % TDC_SOURCE, file=sys.stderr)
        return 2
    if not os.path.isdir(a.tdc_dir):
        print("tdc_run: tdc case directory %r is not a directory (expected %s)" % (a.tdc_dir, TDC_SOURCE),
              file=sys.stderr)
        return 2
    if not os.access(a.txpath, os.X_OK):
        print("tdc_run: %s is not an executable" % a.txpath, file=sys.stderr)
        return 2
    tc = shlex.quote(os.path.abspath(a.txpath)) + " tc"
    files = a.files or sorted(f for f in os.listdir(a.tdc_dir) if f.endswith(".json"))
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="txpath-tdc-") as work:
        for name in files:
            with open(os.path.join(a.tdc_dir, os.path.basename(name))) as f:
                cases = json.load(f)
            base = os.path.basename(name)
            passed = failed = skipped = 0
            config_only = config_passed = 0
            for case in cases:
                if base in NOT_IMPLEMENTED:
                    skipped += 1
                    if a.verbose:
                        print("  skip %s %s: %s" % (base, case["id"], NOT_IMPLEMENTED[base]))
                    continue
                if "scapyPlugin" in requires(case) or "scapy" in case:
                    skipped += 1
                    print("  skip %s %s (%s): needs packets (scapyPlugin)" % (base, case["id"], case["name"]))
                    continue
                config_only += 1
                good, why = run_case(case, tc, work)
                if good:
                    passed += 1
                    config_passed += 1
                    if a.verbose:
                        print("  pass %s %s %s" % (base, case["id"], case["name"]))
                else:
                    failed += 1
                    print("  FAIL %s %s (%s): %s" % (base, case["id"], case["name"], why))
            rows.append((base, passed, failed, skipped, config_only, config_passed))
            if base in IMPLEMENTED and config_only and config_passed < a.min_pass * config_only:
                ok = False
    print("%-16s %6s %6s %7s   %s" % ("file", "passed", "failed", "skipped", "config-only pass rate"))
    for base, p, f, s, n, np_ in rows:
        rate = "%d/%d (%.0f%%)" % (np_, n, 100.0 * np_ / n) if n else "-"
        print("%-16s %6d %6d %7d   %s" % (base, p, f, s, rate))
    impl = [r for r in rows if r[0] in IMPLEMENTED]
    n = sum(r[4] for r in impl)
    np_ = sum(r[5] for r in impl)
    if n:
        print("implemented qdiscs: %d/%d configuration-only cases pass (%.1f%%), minimum per file %.0f%%"
              % (np_, n, 100.0 * np_ / n, 100 * a.min_pass))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
