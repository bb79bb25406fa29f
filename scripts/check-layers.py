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
#   library (libtxpath, installed):
#     base <- sync <- core <- qdisc, device <- engine <- strategy <- tc
#   the tools (txpath_app, not installed; their headers are private to the build):
#     core <- net;  tc, net <- bench;  tc <- exporter
LAYERS = {
    "base": [],                    # clock, per-thread counters, cpu_relax, topology
    "sync": ["base"],              # locks, parking, rings
    "core": ["sync"],              # pool, frames, text, files, queue selection
    "qdisc": ["core"],             # the queueing disciplines
    "device": ["core"],            # the devices
    "engine": ["qdisc", "device"], # QueueBase, the driver loop, the scheduler
    "strategy": ["engine"],        # the locking strategies around a qdisc
    "tc": ["strategy"],            # tc configuration, tc -batch, live tc statistics, metrics text
    "net": ["core"],               # testbed, sink, netns, interface counters (tools)
    "bench": ["tc", "net"],        # the bench, its report and table (tools)
    "exporter": ["tc"],            # the exporter's HTTP endpoint (tools)
}

# The layers built into the tools only (txpath_app): no library layer and no public header may
# include them; tools/ may.
APP_LAYERS = {"net", "bench", "exporter"}

# Each public header (include/txpath/NAME) belongs to the layer that implements it, and an
# include of it is checked as an include of that layer: a device may not reach the engine by
# including "txpath/txqueue.hpp". A public header missing here is refused.
PUBLIC_LAYER = {
    "counter.hpp": "base", "error.hpp": "base", "topology.hpp": "base",
    "spin.hpp": "sync",
    "packet.hpp": "core", "pool.hpp": "core", "frame.hpp": "core", "text.hpp": "core",
    "file.hpp": "core", "queue_select.hpp": "core", "version.hpp": "core",
    "histogram.hpp": "core",
    "traffic_classes.hpp": "core",
    "qdisc.hpp": "qdisc", "qdisc_dump.hpp": "qdisc", "qdisc_options.hpp": "qdisc",
    "device.hpp": "device", "dql.hpp": "device", "tx_lock.hpp": "device",
    "netdev.hpp": "device", "real_device.hpp": "device",
    "txqueue.hpp": "engine",
    "multiqueue.hpp": "strategy",
    "tc.hpp": "tc", "metrics.hpp": "tc",
}

# Headers only their own layer may include (glob on the path as written in the #include).
PRIVATE = {
    "device": ["device/*_device.hpp", "device/real_devices.hpp"],
}

PUBLIC = "txpath"          # include/txpath, included as "txpath/..."
PUBLIC_ONLY = ["examples"]  # top-level folders that may include only public headers
TOOLS = "tools"            # the CLI glue of txpath_app: what its layers may include (TOOLS_ON)
TOOLS_ON = ["bench", "exporter"]

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


def public_layer(included):
    """The layer of a public header as included ("txpath/pool.hpp" -> "core"), or None if it is
    not in PUBLIC_LAYER."""
    return PUBLIC_LAYER.get(included.partition("/")[2])


def private_to_other(layer, included):
    for owner, patterns in PRIVATE.items():
        if owner != layer and any(fnmatch.fnmatch(included, p) for p in patterns):
            return owner
    return None


def refusal(layer, included):
    """Why `layer` may not include `included` (a layer's or a public header), or None."""
    target = target_layer("\"", included)
    if target == PUBLIC:
        owner = public_layer(included)
        if owner is None:
            return f"'{included}' has no layer: add it to PUBLIC_LAYER in scripts/check-layers.py"
        if owner not in allowed_layers(layer):
            return f"layer '{layer}' may not include '{included}' (public header of layer '{owner}')"
        return None
    owner = private_to_other(layer, included)
    if owner is not None:
        return f"layer '{layer}' may not include '{included}' (private to layer '{owner}')"
    if target not in LAYERS or target not in allowed_layers(layer):
        return f"layer '{layer}' may not include '{included}' (layer '{target}')"
    return None


def check_library_file(path, layer, problems):
    for number, bracket, included in includes(path):
        if target_layer(bracket, included) is None:
            continue  # same folder or system header
        why = refusal(layer, included)
        if why:
            problems.append(f"{shown(path)}:{number}: {why}")


def check_public_header(path, problems):
    name = os.path.relpath(path, os.path.join(ROOT, "include", PUBLIC))
    layer = PUBLIC_LAYER.get(name)
    if layer is None:
        problems.append(f"{shown(path)}: a public header with no layer: add it to PUBLIC_LAYER in "
                        "scripts/check-layers.py")
        return
    if layer in APP_LAYERS:
        problems.append(f"{shown(path)}: a public header of the tools' layer '{layer}'")
    for number, bracket, included in includes(path):
        target = target_layer(bracket, included)
        if target is None:
            continue
        if target != PUBLIC:
            problems.append(f"{shown(path)}:{number}: a public header may include only public "
                            f"headers, not '{included}'")
            continue
        why = refusal(layer, included)
        if why:
            problems.append(f"{shown(path)}:{number}: {why}")


def check_public_only_file(path, who, problems):
    for number, bracket, included in includes(path):
        target = target_layer(bracket, included)
        if target is None or target == PUBLIC:
            continue
        problems.append(f"{shown(path)}:{number}: {who} may include only public headers, not '{included}'")


def check_tools_file(path, problems):
    """tools/ (the CLI glue of txpath_app) sits on the tools' layers: what they may include."""
    may = set().union(*(allowed_layers(layer) for layer in TOOLS_ON))
    for number, bracket, included in includes(path):
        target = target_layer(bracket, included)
        if target is None:
            continue
        owner = public_layer(included) if target == PUBLIC else target
        private = private_to_other(None, included) if target != PUBLIC else None
        if owner not in may or private is not None:
            why = f"private to layer '{private}'" if private else f"layer '{owner}'"
            problems.append(f"{shown(path)}:{number}: tools/ may not include '{included}' ({why})")


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
    for path in source_files(os.path.join(root, "include", PUBLIC)):
        check_public_header(path, problems)
    for top in PUBLIC_ONLY:
        for path in source_files(os.path.join(root, top)):
            check_public_only_file(path, top + "/", problems)
    for path in source_files(os.path.join(root, TOOLS)):
        check_tools_file(path, problems)
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
