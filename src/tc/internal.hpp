// SPDX-License-Identifier: MIT
// Pieces of the tc layer shared between its files (not public API).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace txpath::tc {

// A batch or configuration line split as tc's makeargs does: whitespace-separated words, double
// quotes group a word, '#' starts a comment (config.cpp).
std::vector<std::string> batch_words(std::string_view line);

}  // namespace txpath::tc
