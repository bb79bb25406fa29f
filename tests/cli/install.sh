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
test -f "$tmp/prefix/share/doc/txpath/LICENSE"
# Exactly the public headers docs/library.md lists are installed: no tool's header, nothing else.
listed=$(sed -n '/^<!-- public-headers -->$/,/^<!-- \/public-headers -->$/p' "$src_dir/docs/library.md" |
         grep -o '^| `txpath/[a-z_]*\.hpp`' | sed 's/^| `//; s/`$//' | sort)
installed=$(cd "$tmp/prefix/include" && find . -type f | sed 's|^\./||' | sort)
[ -n "$listed" ] || { echo "install: docs/library.md lists no public headers" >&2; exit 1; }
if [ "$listed" != "$installed" ]; then
  echo "install: the installed headers are not those docs/library.md lists:" >&2
  diff <(echo "$listed") <(echo "$installed") >&2
  exit 1
fi
pc=$(find "$tmp/prefix" -name txpath.pc | head -1)
test -n "$pc"
# 1. find_package(txpath)
cmake -S "$src_dir/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
# 2. pkg-config: libtxpath.a is static, so its own dependencies come from Requires.private;
# the .pc file names no -std (the consumer chooses C++20 or later). `pkg-config --static` would
# also want hwloc's own private libraries as archives (libudev-dev), so the consumer links the
# private requirements the shared way (docs/library.md, "Building against txpath").
export PKG_CONFIG_PATH=$(dirname "$pc")
pkg-config --print-requires-private txpath | grep -qw hwloc
if pkg-config --print-requires txpath | grep -q .; then
  echo "install: txpath.pc has public Requires: $(pkg-config --print-requires txpath)" >&2; exit 1
fi
if pkg-config --cflags txpath | grep -q -- '-std='; then
  echo "install: txpath.pc forces a language standard: $(pkg-config --cflags txpath)" >&2; exit 1
fi
# shellcheck disable=SC2046
c++ -std=c++20 "$src_dir/tests/install/consumer.cpp" -o "$tmp/consumer-pc" \
    $(pkg-config --cflags --libs txpath) $(pkg-config --libs $(pkg-config --print-requires-private txpath))
"$tmp/consumer-pc"
# 3. the examples of docs/library.md, built against the installed package and run
cmake -S "$src_dir/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/examples" >/dev/null
ctest --test-dir "$tmp/examples" --output-on-failure >/dev/null
"$tmp/prefix/bin/txpath" --version
echo "install: find_package and pkg-config consumers and the examples built and ran"
