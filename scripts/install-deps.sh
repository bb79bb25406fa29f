#!/usr/bin/env bash
# Installs the Debian 12 packages txpath needs to build, test and benchmark (run as root).
# python3 (standard library only): the build's include-direction check (scripts/check-layers.py)
# and the tdc conformance runner (scripts/tdc_run.py). libnl-route-3-dev: the testbed's rtnetlink
# calls (src/net/rtnl.cpp). iproute2: the testbed's user-given qdiscs (tc syntax, run by tc) and
# the tests that compare with the kernel's tc and check the testbed with ip. prometheus (for its
# promtool) and python3-prometheus-client: tests/cli/metrics.sh checks the exporter's pages with
# `promtool check metrics` and prometheus_client's OpenMetrics parser. dpdk, dpdk-dev and
# libdpdk-dev: the bench's DPDK peers (peer:testpmd runs dpdk-testpmd, which dpdk-dev ships;
# peer:dpdk links DPDK's libraries).
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev nlohmann-json3-dev
      libhwloc-dev libnuma-dev libck-dev liburcu-dev libnl-route-3-dev libpcap-dev libcpp-httplib-dev jq
      iproute2 tcpdump libxdp-dev libbpf-dev python3 prometheus python3-prometheus-client
      dpdk dpdk-dev libdpdk-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
