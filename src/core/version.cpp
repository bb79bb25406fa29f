// SPDX-License-Identifier: MIT
// BuildInfo from the header cmake/build_facts.cmake writes at build time.
#include "txpath/version.hpp"

#include "txpath_build_facts.hpp"

namespace txpath {

const BuildInfo& build_info() noexcept {
  static constexpr BuildInfo kInfo{
      .version = TXPATH_BUILD_VERSION,
      .project_version = TXPATH_BUILD_PROJECT_VERSION,
      .git_describe = TXPATH_BUILD_GIT_DESCRIBE,
      .compiler_id = TXPATH_BUILD_COMPILER_ID,
      .compiler_version = TXPATH_BUILD_COMPILER_VERSION,
      .build_type = TXPATH_BUILD_TYPE,
      .sanitize = TXPATH_BUILD_SANITIZE,
  };
  return kInfo;
}

}  // namespace txpath
