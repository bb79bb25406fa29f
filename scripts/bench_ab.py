#!/usr/bin/env python3
# Interleaved A/B of two txpath binaries on the same bench, e.g. a change against main:
#   scripts/bench_ab.py OLD/txpath NEW/txpath OUTDIR [N] [-- BENCH ARGS...]
# runs `BINARY bench BENCH ARGS --quiet --json OUTDIR/X-k.json` N times each in ABBA order
# (A B B A A B ...; default N 4, default args `--device null --threads 1,2 --repeat 5`) and prints,
# per row, each side's median Mpps over the N invocations with its min-max, B/A of the medians and
# the median CPU ns per packet. A side's spread is its invocations' min-max: a B/A whose ranges
# overlap is within this machine's noise. Exit status 2 for bad arguments, 1 if a bench failed.
import json
import os
import statistics
import subprocess
import sys


def main(argv):
    if "--" in argv:
        cut = argv.index("--")
        argv, bench_args = argv[:cut], argv[cut + 1:]
    else:
        bench_args = ["--device", "null", "--threads", "1,2", "--repeat", "5"]
    if len(argv) not in (3, 4) or (len(argv) == 4 and not argv[3].isdigit()):
        print("usage: bench_ab.py OLD NEW OUTDIR [N] [-- BENCH ARGS...]", file=sys.stderr)
        return 2
    binaries = {"A": argv[0], "B": argv[1]}
    out, n = argv[2], int(argv[3]) if len(argv) == 4 else 4
    os.makedirs(out, exist_ok=True)
    order = [w for i in range(n) for w in (("A", "B") if i % 2 == 0 else ("B", "A"))]
    runs = {"A": [], "B": []}
    for k, who in enumerate(order):
        path = os.path.join(out, f"{who}-{k}.json")
        with open(os.path.join(out, f"{who}-{k}.txt"), "w") as log:
            rc = subprocess.run([binaries[who], "bench", *bench_args, "--quiet", "--json", path],
                                stdout=log, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            print(f"bench_ab.py: {binaries[who]} exited {rc} (see {path[:-5]}.txt)", file=sys.stderr)
            return 1
        with open(path) as f:
            runs[who].append({(r["strategy"], r["threads"]): r for r in json.load(f)["results"]})
    print(f"{'strategy':18} thr  A Mpps med [min-max]      B Mpps med [min-max]      B/A  A ns/pkt B ns/pkt")
    for key in sorted(runs["A"][0], key=lambda k: (k[1], k[0])):
        if any(key not in r for r in runs["B"]):
            continue
        a = [r[key]["mpps"] for r in runs["A"]]
        b = [r[key]["mpps"] for r in runs["B"]]
        ca = statistics.median(r[key]["cpu_ns_per_pkt"] for r in runs["A"])
        cb = statistics.median(r[key]["cpu_ns_per_pkt"] for r in runs["B"])
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{key[0]:18} {key[1]:3} {ma:7.2f} [{min(a):6.2f}-{max(a):6.2f}]  {mb:7.2f} "
              f"[{min(b):6.2f}-{max(b):6.2f}]  {mb / ma:5.2f}  {ca:7.1f} {cb:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
