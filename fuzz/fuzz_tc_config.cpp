// SPDX-License-Identifier: MIT
// libFuzzer target: the tc command parser and configuration loader (tc::Config::parse, which runs
// every line as a tc command: link / qdisc / class add|change|replace|del, every qdisc's and
// class's options). Any input must either load or throw ConfigError with a one-line message; a
// loaded configuration must write itself out in a form that reads back to the same text, and
// print tc's text and JSON for every device without failing.
// Run: scripts/test-all.sh fuzz  (60 s per target), or
//      ./build-fuzz/fuzz_tc_config fuzz/corpus/tc_config
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/error.hpp"
#include "txpath/tc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > 8192) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  txpath::tc::Config cfg;
  try {
    cfg = txpath::tc::Config::parse(text, "fuzz");
  } catch (const txpath::ConfigError& e) {
    const std::string_view what = e.what();
    if (what.empty() || what.find('\n') != std::string_view::npos) std::abort();  // one line
    return 0;
  }
  // The file form reads back to itself.
  const std::string once = cfg.serialize();
  std::string twice;
  try {
    twice = txpath::tc::Config::parse(once, "again").serialize();
  } catch (const txpath::ConfigError&) {
    std::abort();  // what txpath tc wrote must load
  }
  if (once != twice) std::abort();
  // Every device prints, as text and JSON, with and without statistics.
  for (const auto& dev : cfg.devices()) {
    for (int mode = 0; mode < 4; ++mode) {
      txpath::tc::Config::ShowOptions show;
      show.json = mode & 1;
      show.stats = mode & 2;
      std::ostringstream out;
      const std::vector<std::string> q = {"qdisc", "show", "dev", dev.name};
      const std::vector<std::string> c = {"class", "show", "dev", dev.name};
      cfg.execute(q, out, show);
      cfg.execute(c, out, show);
    }
  }
  return 0;
}
