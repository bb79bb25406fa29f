// SPDX-License-Identifier: MIT
// What this build of txpath is: its version and how it was built. Taken when the library is
// built (not when cmake configures it), so a new commit shows without re-running cmake.
// `txpath --version` prints them; `txpath bench --json` records them (docs/bench.md,
// "The bench's outputs").
#pragma once

#include <string_view>

namespace txpath {

struct BuildInfo {
  // `git describe --always --dirty` of the source tree, as a version: a tag as is
  // ("v0.2.0-3-gabc1234"), else the project version with the commit ("0.1.0+g1f04f52-dirty");
  // "0.1.0+unknown" when built outside a git checkout (a release tarball) or without git.
  std::string_view version;
  std::string_view project_version;  // CMakeLists.txt's project(VERSION), "0.1.0"
  std::string_view git_describe;     // the raw `git describe` output, or "unknown"
  std::string_view compiler_id;      // CMake's compiler id: "GNU", "Clang"
  std::string_view compiler_version; // "12.2.0"
  std::string_view build_type;       // "Release", "Debug", ... ("none" when not set)
  std::string_view sanitize;         // "", "thread" or "address" (TXPATH_SANITIZE)
};

// This build's facts (static storage: the views stay valid).
const BuildInfo& build_info() noexcept;

}  // namespace txpath
