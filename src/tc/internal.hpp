// SPDX-License-Identifier: MIT
// Pieces of the tc layer shared between its files (not public API).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace txpath::tc {

// A batch or configuration line split as tc's makeargs does: whitespace-separated words, double
// quotes group a word, '#' starts a comment (config.cpp).
std::vector<std::string> batch_words(std::string_view line);
// True if words[0] is a tc object (qdisc, class or link, or a prefix tc accepts for one).
bool is_tc_command(std::span<const std::string> words);

}  // namespace txpath::tc
