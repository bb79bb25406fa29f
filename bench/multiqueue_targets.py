#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Measures issue 14's multi-queue comparisons with `txpath bench` and prints them as ratios
within each run (median of interleaved rounds; the min..max of each row is in the bench's own
table, printed to stderr as it runs).

  1. null and nic: busylock, 2 senders, on 2 TX queues vs on 1.
  2. ifb null NIC (txpath testbed up --kind ifb --queues CORES): the best txpath row vs the
     kernel row at 1, 2 and 8 senders, Mpps and CPU per packet.
  3. veth testbed (txpath testbed up --queues CORES): the same at 2 and 8 senders.

Usage (as root for 2 and 3): bench/multiqueue_targets.py --txpath build/txpath [--repeat 5]
[--duration 0.5] [--skip-real]. Makes and removes its own testbeds (refuses to run when one of
the default names exists). Exit status 0, or 1 if a bench run failed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def bench(txpath, args, repeat, duration):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = [txpath, "bench", "--repeat", str(repeat), "--duration", str(duration), "--json", out] + args
        print("$ " + " ".join(cmd[1:]), flush=True)
        r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise SystemExit("txpath bench failed (exit %d)" % r.returncode)
        with open(out) as f:
            return json.load(f)["results"]


def queue_scaling(txpath, device, repeat, duration):
    res = bench(txpath, ["--device", device, "--strategy", "busylock", "--threads", "2",
                         "--queues", "1,2"], repeat, duration)
    by_q = {r["queues"]: r for r in res}
    one, two = by_q[1], by_q[2]
    print("  %-4s busylock, 2 senders: 1 queue %.3f Mpps, 2 queues %.3f Mpps: %.2fx "
          "(CPU/pkt %.0f -> %.0f ns)" % (device, one["mpps"], two["mpps"], two["mpps"] / one["mpps"],
                                         one["cpu_ns_per_pkt"], two["cpu_ns_per_pkt"]))


def best_vs_kernel(txpath, device, threads, queues, repeat, duration):
    """Prints the best txpath row against the kernel row per thread count; returns
    {threads: (kernel row, best row)}."""
    res = bench(txpath, ["--device", device, "--threads", ",".join(map(str, threads)),
                         "--queues", str(queues)], repeat, duration)
    rows_by_threads = {}
    for t in threads:
        rows = [r for r in res if r["threads"] == t]
        kern = next(r for r in rows if r["strategy"] == "kernel")
        # The floor row is the harness's own limit, not a txpath transmit path: left out.
        ours = [r for r in rows if r["strategy"] not in ("kernel", "floor", "limit") and r["conserved"]]
        best = max(ours, key=lambda r: r["mpps"])
        lost = best.get("sink", {}).get("lost", 0) if isinstance(best.get("sink"), dict) else 0
        print("  %-18s %d senders, %d queues: best %-16s %.3f Mpps = %.2fx kernel (%.3f), CPU/pkt "
              "%.0f ns = %.2fx kernel (%.0f); its drops %.1f%%, lost at arrival %d" % (
                  device, t, queues, best["strategy"], best["mpps"], best["mpps"] / kern["mpps"],
                  kern["mpps"], best["cpu_ns_per_pkt"], best["cpu_ns_per_pkt"] / kern["cpu_ns_per_pkt"],
                  kern["cpu_ns_per_pkt"],
                  100.0 * best["dropped"] / max(1, best["submitted"]), lost))
        rows_by_threads[t] = (kern, best)
    return rows_by_threads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--txpath", default="build/txpath")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--skip-real", action="store_true")
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    print("1. queue scaling (cores: %d)" % cores)
    for device in ("null", "nic"):
        queue_scaling(a.txpath, device, a.repeat, a.duration)
    if a.skip_real:
        return 0
    print("2. ifb null NIC, --queues %d" % cores)
    subprocess.run([a.txpath, "testbed", "up", "--kind", "ifb", "--queues", str(cores)], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        ifb = best_vs_kernel(a.txpath, "afpacket:txpifb0", [1, 2, 8], cores, a.repeat, a.duration)
    finally:
        subprocess.run([a.txpath, "testbed", "down", "--kind", "ifb"], stdout=subprocess.DEVNULL)
    print("3. veth testbed, --queues %d" % cores)
    subprocess.run([a.txpath, "testbed", "up", "--queues", str(cores)], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        veth = best_vs_kernel(a.txpath, "afpacket:txp0", [2, 8], cores, a.repeat, a.duration)
    finally:
        subprocess.run([a.txpath, "testbed", "down"], stdout=subprocess.DEVNULL)
    # The veth receive path's cost per frame: the same row's CPU per packet on veth (transmit +
    # the peer's receive, run in the sender's softirq) less on the ifb (transmit alone).
    print("4. the veth receive path (CPU per packet on veth minus on the ifb, same row)")
    for t in sorted(set(ifb) & set(veth)):
        (ki, bi), (kv, bv) = ifb[t], veth[t]
        print("  %d senders: kernel row %.0f ns (%.0f on veth, %.0f on ifb); best txpath row "
              "(%s on veth) %.0f ns more than %s on the ifb" % (
                  t, kv["cpu_ns_per_pkt"] - ki["cpu_ns_per_pkt"], kv["cpu_ns_per_pkt"],
                  ki["cpu_ns_per_pkt"], bv["strategy"], bv["cpu_ns_per_pkt"] - bi["cpu_ns_per_pkt"],
                  bi["strategy"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
