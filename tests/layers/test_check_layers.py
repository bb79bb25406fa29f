#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/check-layers.py refuses an include against the layer order (run on temporary trees)."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "check-layers.py")

# A small tree whose every include points down.
CLEAN = {
    "src/base/clock.hpp": "#include <chrono>\n",
    "src/sync/park.hpp": '#include "base/clock.hpp"\n#include "txpath/error.hpp"\n',
    "src/engine/driver_loop.hpp": '#include "txpath/device.hpp"\n#include "txpath/qdisc.hpp"\n',
    "src/net/testbed.cpp": '#include "core/text.hpp"\n#include "txpath/frame.hpp"\n',
    "include/txpath/device.hpp": '#include "txpath/pool.hpp"\n',
    "include/txpath/qdisc.hpp": '#include "txpath/pool.hpp"\n',
    "include/txpath/frame.hpp": "#pragma once\n",
    "src/core/pool.cpp": '#include "sync/park.hpp"\n#include "base/clock.hpp"\n',
    "src/device/netif.hpp": "#include <net/if.h>\n",
    "src/device/udp_device.hpp": '#include "device/netif.hpp"\n',
    "src/device/registry.cpp": '#include "device/udp_device.hpp"\n',
    "src/bench/bench.cpp": '#include "device/netif.hpp"\n#include "base/clock.hpp"\n',
    "include/txpath/pool.hpp": '#include "txpath/error.hpp"\n#include <vector>\n',
    "include/txpath/error.hpp": "#pragma once\n",
    "tools/main.cpp": '#include "txpath/pool.hpp"\n#include "cmds.hpp"\n#include "bench/bench.hpp"\n'
                      '#include "net/testbed.hpp"\n#include "core/text.hpp"\n',
    "examples/sender.cpp": "#include <txpath/pool.hpp>\n",
}


def run_check(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        done = subprocess.run([sys.executable, SCRIPT, "--root", root],
                              capture_output=True, text=True, check=False)
        return done.returncode, done.stderr


class CheckLayers(unittest.TestCase):
    def refused(self, path, text, expect):
        rc, err = run_check({**CLEAN, path: text})
        self.assertEqual(rc, 1, err)
        self.assertIn(expect, err)

    def test_clean_tree_passes(self):
        rc, err = run_check(CLEAN)
        self.assertEqual(rc, 0, err)

    def test_reversed_include_is_refused(self):
        self.refused("src/base/clock.hpp", '#include "sync/park.hpp"\n',
                     "src/base/clock.hpp:1: layer 'base' may not include 'sync/park.hpp'")

    def test_sync_may_not_include_core(self):
        self.refused("src/sync/ring.hpp", '#include <atomic>\n#include "engine/queue_base.hpp"\n',
                     "src/sync/ring.hpp:2: layer 'sync' may not include 'engine/queue_base.hpp'")

    def test_reversed_include_in_angle_brackets_is_refused(self):
        self.refused("src/base/clock.hpp", "#include <sync/park.hpp>\n",
                     "layer 'base' may not include 'sync/park.hpp'")

    def test_sideways_include_is_refused(self):
        self.refused("src/qdisc/fq.cpp", '#include "device/netif.hpp"\n',
                     "layer 'qdisc' may not include 'device/netif.hpp'")

    def test_private_header_of_a_lower_layer_is_refused(self):
        self.refused("src/net/sink.cpp", '#include "device/udp_device.hpp"\n',
                     "(private to layer 'device')")

    def test_public_header_may_not_include_the_library(self):
        self.refused("include/txpath/pool.hpp", '#include "sync/park.hpp"\n',
                     "a public header may include only public headers")

    def test_examples_may_include_only_public_headers(self):
        self.refused("examples/sender.cpp", '#include "base/clock.hpp"\n',
                     "examples/ may include only")
        self.refused("examples/sender.cpp", '#include "bench/bench.hpp"\n',
                     "examples/ may include only")

    def test_tools_may_not_include_a_private_header(self):
        self.refused("tools/main.cpp", '#include "device/udp_device.hpp"\n',
                     "tools/ may not include 'device/udp_device.hpp' (private to layer 'device')")

    def test_a_public_header_counts_as_its_layer(self):
        # device may not reach the engine through the engine's public header ...
        self.refused("src/device/netif.cpp", '#include "txpath/txqueue.hpp"\n',
                     "layer 'device' may not include 'txpath/txqueue.hpp' (public header of layer 'engine')")
        # ... nor may a public header of a lower layer include one of a higher layer.
        self.refused("include/txpath/frame.hpp", '#include "txpath/qdisc.hpp"\n',
                     "include/txpath/frame.hpp:1: layer 'core' may not include 'txpath/qdisc.hpp'")

    def test_a_public_header_without_a_layer_is_refused(self):
        self.refused("include/txpath/new_thing.hpp", "#pragma once\n",
                     "a public header with no layer")

    def test_the_library_may_not_include_the_tools(self):
        self.refused("src/device/netif.cpp", '#include "net/testbed.hpp"\n',
                     "layer 'device' may not include 'net/testbed.hpp' (layer 'net')")
        self.refused("src/tc/show.cpp", '#include "bench/bench.hpp"\n',
                     "layer 'tc' may not include 'bench/bench.hpp' (layer 'bench')")

    def test_a_folder_that_is_no_layer_is_refused(self):
        self.refused("src/extra/thing.cpp", "\n", "a folder that is no layer")


if __name__ == "__main__":
    unittest.main()
