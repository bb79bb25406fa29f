// SPDX-License-Identifier: MIT
// tc::Config: the file form (serialize, parse, load): tc batch lines, read as a file is read.
// See config.cpp for the model.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cpu_mask.hpp"
#include "core/text.hpp"
#include "qdisc/mq.hpp"
#include "tc/config_model.hpp"
#include "tc/config_parts.hpp"
#include "tc/commands.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_error.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

using namespace config_detail;

// ---- the file form ----

std::string Config::serialize() const {
  std::ostringstream s;
  s << "# txpath tc configuration: tc batch syntax (txpath tc -batch), rewritten by `txpath tc`\n";
  for (const auto& d : state_->devs) {
    s << "link add dev " << d.config.name << " txqueuelen " << d.config.txqueuelen << " mtu "
      << d.config.mtu;
    if (d.config.tx_queues != 1) s << " numtxqueues " << d.config.tx_queues;  // old files stay
    s << "\n";
    for (std::size_t q = 0; q < d.config.xps_cpus.size(); ++q) {
      if (d.config.xps_cpus[q].empty()) continue;
      s << "link set dev " << d.config.name << " txqueue " << q << " xps_cpus "
        << format_cpu_mask(d.config.xps_cpus[q]) << "\n";
    }
  }
  for (const auto& d : state_->devs) {
    // Tree order: a qdisc, its classes, then the qdiscs on its classes — depth first with an
    // explicit stack, never recursion on the input's depth.
    std::vector<const QdiscConfig*> stack;
    if (const QdiscConfig* root = d.root()) stack.push_back(root);
    while (!stack.empty()) {
      const QdiscConfig& q = *stack.back();
      stack.pop_back();
      s << "qdisc add dev " << d.config.name << " "
        << (q.parent == kRoot ? std::string("root") : "parent " + format_handle(q.parent))
        << " handle " << format_handle(q.handle) << " " << join(q.kind, q.options) << "\n";
      for (const ClassConfig* c : d.classes_of(q.handle))
        s << "class add dev " << d.config.name << " parent " << format_handle(c->parent)
          << " classid " << format_handle(c->classid) << " " << join(c->kind, c->options) << "\n";
      const auto below = d.qdiscs_below(q.handle);
      stack.insert(stack.end(), below.rbegin(), below.rend());
    }
  }
  return s.str();
}

namespace {

// A batch line split the way tc's makeargs does: whitespace-separated words, double quotes group,
// '#' starts a comment.
std::vector<std::string> split_line(std::string_view line) {
  // isspace() of the "C" locale, without a call per byte.
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::size_t end = i;
    if (line[i] == '"') {
      end = line.find('"', ++i);
      if (end == std::string_view::npos) end = line.size();
      out.emplace_back(line.substr(i, end - i));
      i = end < line.size() ? end + 1 : end;
    } else {
      while (end < line.size() && !space(line[end])) ++end;
      out.emplace_back(line.substr(i, end - i));
      i = end;
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return lines;
}

}  // namespace

std::vector<std::string> batch_words(std::string_view line) { return split_line(line); }

bool is_tc_command(std::span<const std::string> words) {
  return !words.empty() && is_object_word(words[0]);
}

void Config::run_file_line(std::string_view line, std::size_t line_no, std::string_view origin) {
  const auto words = split_line(line);
  if (words.empty()) return;
  const std::string where = escape_user_text(origin) + ":" + std::to_string(line_no) + ": ";
  try {
    // A file that is not a tc configuration (a secret, a binary) is named, never quoted.
    if (!is_object_word(words[0]))
      throw ConfigError("line " + std::to_string(line_no) + " is not a tc command (qdisc, class or link)");
    if (words.size() > 1 && (matches(words[1], "show") || matches(words[1], "list")))
      throw ConfigError("a configuration holds no show commands");
    std::ostringstream none;  // never written: show commands are refused above
    execute(words, none, {});
  } catch (const TcArgError& e) {
    throw TcArgError(where + e.what());
  } catch (const ConfigRejected& e) {
    throw ConfigRejected(where + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(where + e.what());
  }
}

Config Config::run_prefix(std::span<const std::string_view> lines, std::size_t count,
                          std::string_view origin, std::size_t& failed) {
  Config cfg;
  cfg.state_->defer_validation = true;
  failed = count;
  for (std::size_t i = 0; i < count; ++i) {
    try {
      cfg.run_file_line(lines[i], i + 1, origin);
    } catch (const ConfigError&) {
      failed = i;
      break;
    }
  }
  cfg.state_->defer_validation = false;
  return cfg;
}

// Reads every line without building trees, then builds each device once: O(n log n). Only a file
// that fails is looked at again, to name the first line at fault as reading it line by line
// (building after every line) would: a binary search for the line after which the configuration
// stops building, then that line run with every check — O(n log^2 n), still no quadratic path.
Config Config::parse(std::string_view text, std::string_view origin) {
  const std::vector<std::string_view> lines = split_lines(text);
  std::size_t failed = 0;
  Config cfg = run_prefix(lines, lines.size(), origin, failed);
  std::size_t good = 0;            // the configuration of the first `good` lines builds
  std::size_t bad = lines.size();  // that of the first `bad` lines does not, or line `bad` fails
  if (failed == lines.size()) {
    if (cfg.builds()) return cfg;
  } else if (std::size_t unused = 0; run_prefix(lines, failed, origin, unused).builds()) {
    good = failed;
    bad = failed + 1;
  } else {
    bad = failed;
  }
  while (bad - good > 1) {
    const std::size_t mid = good + (bad - good) / 2;
    std::size_t unused = 0;
    (run_prefix(lines, mid, origin, unused).builds() ? good : bad) = mid;
  }
  // Line `bad` (1-based) is the first at fault: run it with every check to get its error.
  cfg = run_prefix(lines, good, origin, failed);
  cfg.run_file_line(lines[bad - 1], bad, origin);
  // Not expected: the line passed its own checks. Its tree's error is the file's, and a partial
  // configuration is never returned.
  const std::string where = escape_user_text(origin) + ":" + std::to_string(bad) + ": ";
  for (const auto& d : cfg.state_->devs) {
    try {
      (void)cfg.build(d, QdiscEnv{});
    } catch (const ConfigRejected& e) {
      throw ConfigRejected(where + e.what());
    } catch (const ConfigError& e) {
      throw ConfigError(where + e.what());
    }
  }
  throw ConfigError(where + "the configuration does not build from this line on");
}

}  // namespace txpath::tc
