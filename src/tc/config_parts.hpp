// SPDX-License-Identifier: MIT
// What the parts of tc::Config (config.cpp, config_build.cpp, config_link.cpp, config_file.cpp)
// share: tc's word matching, its errors, and a class's options as a qdisc parser reads them.
// Private to src/tc/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc_options.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc::config_detail {

// tc's matches(): `arg` is a non-empty prefix of `word`.
bool matches(std::string_view arg, std::string_view word);
// "KIND OPT1 OPT2 ...".
std::string join(std::string_view kind, const std::vector<std::string>& options);
// The kernel's refusal of a request (ConfigRejected: exit status 2 in `txpath tc`).
[[noreturn]] void rejected(const std::string& what);
// The value after args[i] (advancing i), or tc's "Command line is not complete" (exit 255).
const std::string& next_arg(std::span<const std::string> args, std::size_t& i);
// A tc object word ("qdisc", "class", "link" or a prefix tc accepts for it).
bool is_object_word(std::string_view w);

// QdiscOptions over a class's tokens whose errors are tc's lines (throw_tc_line): a file's
// reader puts "FILE:LINE: " before them. The class must outlive the options.
struct ClassOptions {
  std::vector<std::string_view> views;
  const ClassConfig* config = nullptr;
  QdiscOptions options() const;
};
ClassOptions class_options_of(const ClassConfig& c);

}  // namespace txpath::tc::config_detail
