// SPDX-License-Identifier: MIT
// QdiscOptions: the option tokens a qdisc's or a class's parser reads (the words after the kind,
// as tc takes them), with the one-line error every bad option becomes. make_qdisc() builds one
// for a qdisc spec; the tc layer and library consumers build one for ClassOps::add_class() and
// change_class() (txpath/qdisc.hpp), e.g. for htb:
//
//   std::vector<std::string_view> words = {"rate", "1mbit", "ceil", "2mbit"};
//   txpath::QdiscOptions options(words, "class \"1:10 htb rate 1mbit ceil 2mbit\"");
//   txpath::add_class(*qdisc, 0x10, 0, options, env);  // or qdisc->class_ops()->add_class(...)
//
// fail() is a parse error (tc refuses the command itself: ConfigError, exit 1); reject() is a
// request that parsed but that the kernel would refuse (ConfigRejected: exit 2), e.g. prio bands 1.
// The tokens are viewed, not copied: they must outlive the QdiscOptions.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "txpath/error.hpp"

namespace txpath {

class QdiscOptions {
 public:
  // fail(what, rejected) must throw: ConfigRejected if `rejected`, else ConfigError.
  QdiscOptions(std::span<const std::string_view> tokens,
               std::function<void(const std::string&, bool rejected)> fail)
      : tokens_(tokens), fail_(std::move(fail)) {}
  // Errors read "<context>: <what is wrong>", context e.g. `class "1:10 htb rate x"` (the
  // caller escapes any user text in it: core/text.hpp).
  QdiscOptions(std::span<const std::string_view> tokens, std::string context)
      : QdiscOptions(tokens, [context = std::move(context)](const std::string& what, bool rejected) {
          if (rejected) throw ConfigRejected(context + ": " + what);
          throw ConfigError(context + ": " + what);
        }) {}

  std::span<const std::string_view> tokens() const noexcept { return tokens_; }
  std::size_t size() const noexcept { return tokens_.size(); }
  std::string_view operator[](std::size_t i) const noexcept { return tokens_[i]; }

  // Throws ConfigError `<context>: what`; never returns.
  [[noreturn]] void fail(const std::string& what) const {
    fail_(what, false);
    std::abort();  // fail_ always throws
  }
  // Throws ConfigRejected `<context>: what`; never returns.
  [[noreturn]] void reject(const std::string& what) const {
    fail_(what, true);
    std::abort();  // fail_ always throws
  }
  // What fail() says when an option's value is missing: tc's words (`txpath tc` exits 255).
  static constexpr std::string_view kIncomplete = "Command line is not complete. Try option \"help\"";
  // The value after option tokens_[i] (advancing i), or fail(kIncomplete).
  std::string_view value(std::size_t& i) const {
    if (i + 1 >= tokens_.size()) fail(std::string(kIncomplete));
    return tokens_[++i];
  }

 private:
  std::span<const std::string_view> tokens_;
  std::function<void(const std::string&, bool)> fail_;
};

}  // namespace txpath
