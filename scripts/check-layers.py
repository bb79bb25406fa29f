#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Refuse an include that points the wrong way between txpath's layers.

The library's sources are folders under src/, one layer each; the public headers are
include/txpath. Each layer may include its own headers, the public headers, and the headers of
the layers below it in LAYERS (the table is the one place the direction is written; docs/
architecture.md explains it). A public header may include only other public headers; the CLI
(tools/) and the examples (examples/) may include only public headers and their own. Some
headers are private to their layer (PRIVATE): no other layer may include them, even one above.

Usage: check-layers.py [--root DIR] [--stamp FILE]
Exit status: 0 when every include points down, 1 when one does not (each listed on stderr as
"file:line: layer 'a' may not include 'path' (layer 'b')"), 2 on a usage error.
tests/layers/test_check_layers.py checks that a reversed include is refused.
"""

import argparse
import fnmatch
import os
import re
import sys

# layer -> the layers it may include directly. What a layer may include is this set closed
# under the same table: "core" may include "sync" and therefore "base" too.
#
#   base <- sync <- core, qdisc, device <- strategy (core + qdisc)
#                   qdisc <- tc;  device <- bench;  net stands alone
LAYERS = {
    "base": [],                    # clock, per-thread counters, cpu_relax: includes nothing
    "sync": ["base"],              # locks, parking, rings
    "core": ["sync"],              # pool, frames, QueueBase, text, files, topology
    "qdisc": ["sync"],             # the queueing disciplines
    "device": ["sync"],            # the devices
    "strategy": ["core", "qdisc"], # the locking strategies around a qdisc
    "tc": ["qdisc"],               # tc text, tc batch, live tc statistics
    "net": ["base"],               # testbed, sink, netns
    "bench": ["device"],           # the bench (uses the rest through the public headers)
}

# Headers only their own layer may include (glob on the path as written in the #include).
PRIVATE = {
    "device": ["device/*_device.hpp", "device/real_devices.hpp"],
}

PUBLIC = "txpath"          # include/txpath, included as "txpath/..."
PUBLIC_ONLY = ["tools", "examples"]  # top-level folders that may include only public headers

SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def allowed_layers(layer):
    """The layers `layer` may include: itself and everything below it in LAYERS."""
    seen, todo = set(), [layer]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(LAYERS[current])
    return seen


def source_files(folder):
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if match:
                yield number, match.group(1), match.group(2)


def target_layer(bracket, included):
    """The layer an include names ("sync/park.hpp" -> "sync"; "txpath/pool.hpp" -> PUBLIC), or
    None for a header of the same folder or a system header (<net/if.h>: <...> names a layer
    only when the header is one of ours)."""
    head, sep, _ = included.partition("/")
    if not sep:
        return None
    if bracket == "<" and head != PUBLIC and not os.path.isfile(os.path.join(ROOT, "src", included)):
        return None
    return head


def private_to_other(layer, included):
    for owner, patterns in PRIVATE.items():
        if owner != layer and any(fnmatch.fnmatch(included, p) for p in patterns):
            return owner
    return None


def check_library_file(path, layer, problems):
    may = allowed_layers(layer)
    for number, bracket, included in includes(path):
        target = target_layer(bracket, included)
        if target is None or target == PUBLIC:
            continue  # same folder, system or public header
        owner = private_to_other(layer, included)
        wrong = target not in LAYERS or target not in may or owner is not None
        if wrong:
            why = f"private to layer '{owner}'" if owner else f"layer '{target}'"
            problems.append(f"{shown(path)}:{number}: layer '{layer}' may not include '{included}' ({why})")


def check_public_only_file(path, who, problems):
    for number, bracket, included in includes(path):
        target = target_layer(bracket, included)
        if target is None or target == PUBLIC:
            continue
        problems.append(f"{shown(path)}:{number}: {who} may include only public headers, not '{included}'")


ROOT = "."


def shown(path):
    """A path as the messages show it: relative to the repository checked."""
    return os.path.relpath(path, ROOT)


def check(root):
    global ROOT
    ROOT = os.path.normpath(root)
    problems = []
    src = os.path.join(root, "src")
    if not os.path.isdir(src):
        raise FileNotFoundError(f"no src/ folder under {root!r}")
    for entry in sorted(os.listdir(src)):
        folder = os.path.join(src, entry)
        if not os.path.isdir(folder):
            continue
        if entry not in LAYERS:
            problems.append(f"{shown(folder)}: a folder that is no layer: add it to LAYERS in "
                            "scripts/check-layers.py and to docs/architecture.md")
            continue
        for path in source_files(folder):
            check_library_file(path, entry, problems)
    public = os.path.join(root, "include", PUBLIC)
    for path in source_files(public):
        check_public_only_file(path, "a public header", problems)
    for top in PUBLIC_ONLY:
        for path in source_files(os.path.join(root, top)):
            check_public_only_file(path, top + "/", problems)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the repository to check (default: this script's)")
    parser.add_argument("--stamp", help="touch this file when the check passes (for the build)")
    args = parser.parse_args()
    try:
        problems = check(args.root)
    except OSError as e:
        print(f"check-layers: {e}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-layers: {len(problems)} include(s) against the layer order "
              "(see LAYERS in scripts/check-layers.py, docs/architecture.md)", file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8"):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
