#!/usr/bin/env bash
# `cmake --install` puts headers, library, CLI, a CMake package and a pkg-config file in a
# prefix; a downstream project builds against it with find_package(txpath) and with pkg-config.
set -euo pipefail
bin=${1:?usage: install.sh PATH_TO_TXPATH}
build_dir=$(cd "$(dirname "$bin")" && pwd)
src_dir=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/txpath"
test -f "$tmp/prefix/include/txpath/txqueue.hpp"
pc=$(find "$tmp/prefix" -name txpath.pc | head -1)
test -n "$pc"
# 1. find_package(txpath)
cmake -S "$src_dir/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
# 2. pkg-config
export PKG_CONFIG_PATH=$(dirname "$pc")
# shellcheck disable=SC2046
c++ -std=c++20 "$src_dir/tests/install/consumer.cpp" -o "$tmp/consumer-pc" \
    $(pkg-config --cflags --libs txpath)
"$tmp/consumer-pc"
"$tmp/prefix/bin/txpath" --version
echo "install: find_package and pkg-config consumers built and ran"
