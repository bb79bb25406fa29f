// SPDX-License-Identifier: MIT
// CPU masks as the kernel writes them in sysfs (/sys/class/net/IF/queues/tx-N/xps_cpus):
// 32-bit hex words, most significant first, separated by commas ("00000000,0000000f"). Read by
// the real devices (the kernel's XPS maps) and written and read by tc configuration files.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace txpath {

// The most words a mask may have: 4096 CPUs.
inline constexpr std::size_t kMaxCpuMaskWords = 128;

// The CPUs a mask names, ascending; nullopt for a malformed mask (an empty word, a non-hex
// digit, a word over 32 bits, more than kMaxCpuMaskWords words).
inline std::optional<std::vector<unsigned>> parse_cpu_mask(std::string_view mask) {
  std::vector<uint32_t> words;  // most significant first, as written
  for (std::size_t begin = 0;;) {
    const std::size_t comma = mask.find(',', begin);
    const std::size_t end = comma == std::string_view::npos ? mask.size() : comma;
    uint32_t word = 0;
    const auto r = std::from_chars(mask.data() + begin, mask.data() + end, word, 16);
    if (begin == end || r.ec != std::errc() || r.ptr != mask.data() + end) return std::nullopt;
    if (words.size() == kMaxCpuMaskWords) return std::nullopt;
    words.push_back(word);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  std::vector<unsigned> cpus;
  for (std::size_t w = 0; w < words.size(); ++w) {  // w: the word for CPUs 32w .. 32w + 31
    const uint32_t word = words[words.size() - 1 - w];
    for (unsigned b = 0; b < 32; ++b)
      if (word >> b & 1u) cpus.push_back(static_cast<unsigned>(w * 32 + b));
  }
  return cpus;
}

// The mask of `cpus` (each below 32 * kMaxCpuMaskWords): the most significant word without
// leading zeros, the others as 8 hex digits ("3", "1,00000000"); "0" for none.
inline std::string format_cpu_mask(std::span<const unsigned> cpus) {
  std::vector<uint32_t> words(1, 0);  // least significant first
  for (const unsigned c : cpus) {
    if (c / 32 >= kMaxCpuMaskWords) continue;
    if (c / 32 >= words.size()) words.resize(c / 32 + 1, 0);
    words[c / 32] |= uint32_t{1} << (c % 32);
  }
  std::string out;
  char buf[9];
  for (std::size_t i = words.size(); i-- > 0;) {
    const auto r = std::to_chars(buf, buf + 8, words[i], 16);
    const std::string word(buf, r.ptr);
    if (i + 1 == words.size()) out += word;
    else out += "," + std::string(8 - word.size(), '0') + word;
  }
  return out;
}

}  // namespace txpath
