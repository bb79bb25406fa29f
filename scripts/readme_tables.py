#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerates the performance tables of docs/performance.md from `txpath bench --json` runs.

Each table lives between two marker comments, with the command that produced its numbers on the
line after the opening marker:

    <!-- txpath-table:null -->
    Command: `txpath bench --device null --threads 1,2,16 --repeat 5 --json null.json` (...)

    | strategy | senders | Mpps | ... |
    <!-- /txpath-table:null -->

Everything between the markers is rewritten; nothing outside them changes. One table comes from
ONE bench run (its rows are the run's rows, its ratios the run's own, taken within each round):

    scripts/readme_tables.py null --json null.json --command "txpath bench --device null ..."
    scripts/readme_tables.py null --txpath build/txpath -- --device null --threads 1,2,16
    scripts/readme_tables.py --all --txpath build/txpath   # every table, each by its own command

With --txpath the script runs the bench itself (`--json` to a temporary file; the table's
command is written as `txpath bench ARGS --json FILE.json`); with --all it runs, for every
table, the command already written beside it. The file is docs/performance.md (relative to the
current directory: run it from the repository's root) unless --file names another; --readme is
the same option under its old name. It is replaced atomically (a temporary file beside it,
fsync, rename, directory fsync), as txpath writes its own outputs; a symlink is refused. Exit status: 0 done; 1 a bench run failed (or its JSON is partial, or a check failed:
nothing is replaced); 2 bad usage, no such table, markers missing or unbalanced, a JSON file
that cannot be read.
"""
import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

OPEN = "<!-- txpath-table:{} -->"
CLOSE = "<!-- /txpath-table:{} -->"
MARKER = re.compile(r"^<!-- (/?)txpath-table:([A-Za-z0-9_.-]+) -->$")
COMMAND = re.compile(r"^Command: `([^`]+)`")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class Failure(Exception):
    """One line for stderr, and the exit status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def one_line(text):
    """User text as one printable line, cut at 200 characters."""
    text = "".join(c if c.isprintable() else "\\x%02x" % ord(c) for c in str(text))
    return text if len(text) <= 200 else text[:200] + "..."


# ---- the file's blocks --------------------------------------------------------------------------


def blocks(lines):
    """{name: (open line index, close line index)}; Failure(2) when unbalanced or repeated."""
    found, open_at = {}, {}
    for i, line in enumerate(lines):
        m = MARKER.match(line.rstrip("\n"))
        if not m:
            continue
        closing, name = m.group(1) == "/", m.group(2)
        if not closing:
            if name in open_at or name in found:
                raise Failure(f"table {name!r} is opened twice (line {i + 1})", 2)
            open_at[name] = i
        elif name not in open_at:
            raise Failure(f"table {name!r} is closed at line {i + 1} without being opened", 2)
        else:
            found[name] = (open_at.pop(name), i)
    if open_at:
        name, i = next(iter(open_at.items()))
        raise Failure(f"table {name!r} opened at line {i + 1} is never closed", 2)
    return found


def recorded_command(lines, span):
    """The `Command:` line's command of a block, or None."""
    for line in lines[span[0] + 1:span[1]]:
        m = COMMAND.match(line)
        if m:
            return m.group(1)
    return None


# ---- the table --------------------------------------------------------------------------------


def ratio(value):
    return f"{value:.2f}x" if value and value > 0 else "-"


def table_lines(doc):
    """The Markdown table of one bench run: a row per point, in the run's order."""
    rows = doc.get("results")
    if not isinstance(rows, list) or not rows:
        raise Failure("the JSON has no results", 1)
    bad = [r.get("strategy", "?") for r in rows if not r.get("conserved", False)]
    if bad:
        raise Failure("conservation failed in the run (" + ", ".join(map(str, bad)) + "): not tabled", 1)
    queues = any(r.get("queues", 1) != 1 for r in rows)
    parks = len({r.get("park") for r in rows}) > 1
    kernel = any(r.get("vs_kernel_mpps", 0) > 0 for r in rows)
    sink = any("sink" in r for r in rows)
    dpdk = any(r.get("vs_dpdk_mpps", 0) > 0 for r in rows)
    limit = any(r.get("vs_limit", 0) > 0 for r in rows)
    head = ["strategy", "senders"] + (["TX queues"] if queues else []) + (["park"] if parks else [])
    head += ["Mpps", "CPU ns/pkt", "drop%", "CPU vs floor", "Mpps vs busylock", "CPU vs busylock"]
    head += ["Mpps vs kernel", "CPU vs kernel"] if kernel else []
    head += ["Mpps vs peer:dpdk", "CPU vs peer:dpdk"] if dpdk else []
    head += ["CPU vs limit"] if limit else []
    head += ["sink lost"] if sink else []
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [f"`{r['strategy']}`", str(r["threads"])]
        cells += [str(r.get("queues", 1))] if queues else []
        cells += [r.get("park", "on")] if parks else []
        drop = 100.0 * r["dropped"] / r["submitted"] if r.get("submitted") else 0.0
        cells += [f"{r['mpps']:.2f}" + ("~" if r.get("unstable") else ""), f"{r['cpu_ns_per_pkt']:.0f}",
                  f"{drop:.1f}", ratio(r.get("vs_floor_cpu")),
                  ratio(r.get("vs_busylock_mpps")), ratio(r.get("vs_busylock_cpu"))]
        cells += [ratio(r.get("vs_kernel_mpps")), ratio(r.get("vs_kernel_cpu"))] if kernel else []
        cells += [ratio(r.get("vs_dpdk_mpps")), ratio(r.get("vs_dpdk_cpu"))] if dpdk else []
        cells += [ratio(r.get("vs_limit"))] if limit else []
        if sink:
            s = r.get("sink")
            lost = 100.0 * s["lost"] / r["sent"] if s and r.get("sent") else None
            cells.append(f"{lost:.2f}%" if lost is not None else "-")
        out.append("| " + " | ".join(cells) + " |")
    unstable = [f"`{r['strategy']}` at {r['threads']}: {r['unstable_reason']}"
                for r in rows if r.get("unstable") and r.get("unstable_reason")]
    if unstable:
        out += ["", "~ the rounds disagree (the bench's `unstable`): " + "; ".join(unstable) + "."]
    return out


def best_lines(doc):
    """One line: per sender count (and queue count), the txpath row with the most Mpps."""
    best = {}
    for r in doc["results"]:
        if r["strategy"] in ("floor", "kernel", "limit") or r["strategy"].startswith("peer:"):
            continue
        key = (r["threads"], r.get("queues", 1), r.get("park", "on"))
        if key not in best or r["mpps"] > best[key]["mpps"]:
            best[key] = r
    parts = []
    for (threads, queues, park), r in best.items():
        where = f"{threads} sender{'s' if threads != 1 else ''}"
        where += f", {queues} TX queues" if queues != 1 else ""
        where += f", park {park}" if len({k[2] for k in best}) > 1 else ""
        text = f"{where}: `{r['strategy']}` {r['mpps']:.2f} Mpps"
        if r.get("vs_kernel_mpps", 0) > 0:
            text += f", {ratio(r['vs_kernel_mpps'])} the kernel's Mpps at {ratio(r['vs_kernel_cpu'])} its CPU"
        if r.get("vs_floor_cpu", 0) > 0:
            text += f", {ratio(r['vs_floor_cpu'])} the floor's CPU per packet"
        parts.append(text)
    return ["", "Fastest txpath row: " + "; ".join(parts) + "." if parts else ""]


def block_body(doc, command, load=None):
    """The block's lines; `load`: the 1-minute load average before and after the run, if known."""
    cfg, topo = doc.get("config", {}), doc.get("topology", {})
    when = datetime.date.today().isoformat()
    about = (f"{topo.get('cpu_model', '?')}, {topo.get('cores', '?')} cores; "
             f"median of {cfg.get('repeat', '?')} rounds of {cfg.get('duration_s', '?')} s"
             f"{', each in a fresh process' if cfg.get('rounds_in') == 'worker processes' else ''}; "
             f"burst {cfg.get('burst', 1)}; txpath {doc.get('txpath', {}).get('version', '?')}; {when}")
    if load:
        about += f"; load average {load[0]:.1f} before, {load[1]:.1f} after"
    lines = [f"Command: `{command}` ({about}). Generated by `scripts/readme_tables.py`: "
             "do not edit by hand.", ""]
    lines += table_lines(doc)
    lines += best_lines(doc)
    return [line + "\n" for line in lines]


# ---- files and runs ---------------------------------------------------------------------------


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure(f"--json {one_line(path)!r}: {one_line(e)}", 2)
    if not isinstance(doc, dict):
        raise Failure(f"--json {one_line(path)!r}: not a txpath bench document", 2)
    if doc.get("partial"):
        raise Failure(f"--json {one_line(path)!r}: a partial run (stopped by a signal): not tabled", 1)
    return doc


def run_bench(txpath, args):
    """Runs `txpath bench ARGS --json TMP`: its document, and the load average around it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        argv = [txpath, "bench", *args, "--quiet", "--json", out]
        print("readme_tables: running " + shlex.join(argv), file=sys.stderr)
        before = os.getloadavg()[0]
        try:
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
        except OSError as e:
            raise Failure(f"--txpath {one_line(txpath)!r}: {one_line(e)}", 2)
        if done.returncode != 0:
            raise Failure(f"the bench exited with status {done.returncode}: nothing replaced", 1)
        return read_json(out), (before, os.getloadavg()[0])


def bench_args(command):
    """The bench arguments of a recorded command, less `txpath bench` and its --json FILE."""
    argv = shlex.split(command)
    if len(argv) < 2 or os.path.basename(argv[0]) != "txpath" or argv[1] != "bench":
        raise Failure(f"recorded command {one_line(command)!r} is not `txpath bench ...`", 2)
    args, i = [], 2
    while i < len(argv):
        if argv[i] == "--json":
            i += 2
            continue
        if argv[i] != "--quiet" and not argv[i].startswith("--json="):
            args.append(argv[i])
        i += 1
    return args


def command_text(args, name):
    return shlex.join(["txpath", "bench", *args, "--json", f"{name}.json"])


def replace_file(path, text):
    """Temp beside `path`, fsync, rename over it, fsync the directory; its mode is kept."""
    if os.path.islink(path):
        raise Failure(f"{one_line(path)!r} is a symbolic link: not replaced", 2)
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def rewrite(lines, spans, name, body):
    start, end = spans[name]
    return lines[:start + 1] + body + lines[end:]


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the usage as well)
        print(f"readme_tables: error: {one_line(message)}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("table", nargs="?", help="the table's name (its marker: <!-- txpath-table:NAME -->)")
    p.add_argument("--file", "--readme", dest="file", metavar="FILE", default="docs/performance.md",
                   help="the Markdown file whose tables are rewritten (default: docs/performance.md; "
                        "--readme is its old name)")
    p.add_argument("--json", help="the bench run's JSON (with --command)")
    p.add_argument("--command", help="the exact command that produced --json, written beside the table")
    p.add_argument("--txpath", help="run this txpath binary's bench instead of reading --json")
    p.add_argument("--all", action="store_true", help="every table, each by its recorded command")
    # Everything after "--" is the bench's (argparse would take its options for ours).
    cut = argv.index("--") if "--" in argv else len(argv)
    a = p.parse_args(argv[:cut])
    a.bench_args = argv[cut + 1:]
    if a.bench_args and not a.txpath:
        p.error("bench arguments after -- need --txpath")
    if a.all == bool(a.table):
        p.error("name one table, or --all")
    if a.all and not a.txpath:
        p.error("--all runs every table's command: give --txpath")
    if a.table and not NAME.match(a.table):
        p.error(f"table name {one_line(a.table)!r}: 1..64 of A-Z a-z 0-9 _ . -")
    if a.table and bool(a.json) == bool(a.txpath):
        p.error("give --json FILE --command TEXT, or --txpath BIN [-- BENCH ARGS]")
    if a.json and not a.command:
        p.error("--json needs --command (the exact command that produced it)")
    return a


def main(argv):
    a = parse_args(argv)
    try:
        with open(a.file, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise Failure(f"--file {one_line(a.file)!r}: {one_line(e)}", 2)
    spans = blocks(lines)
    names = sorted(spans, key=lambda n: spans[n][0]) if a.all else [a.table]
    for name in names:
        if name not in spans:
            raise Failure(f"{one_line(a.file)!r} has no table {name!r} ({OPEN.format(name)})", 2)
        if a.all and recorded_command(lines, spans[name]) is None:
            raise Failure(f"table {name!r} has no `Command:` line to run", 2)
    for name in names:  # every run first: a failed run replaces nothing
        if a.json:
            body = block_body(read_json(a.json), a.command)
        else:
            args = a.bench_args
            if a.all:
                args = bench_args(recorded_command(lines, spans[name]))
            doc, load = run_bench(a.txpath, args)
            body = block_body(doc, command_text(args, name), load)
        lines = rewrite(lines, spans, name, body)
        spans = blocks(lines)
    replace_file(a.file, "".join(lines))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        print(f"readme_tables: error: {e}", file=sys.stderr)
        sys.exit(e.status)
