// SPDX-License-Identifier: MIT
// txpath tc -batch: tc's semantics — the lines run one after the other, the first that fails
// stops the batch (with -force the batch goes on after it), the lines before it keep their
// changes — at the cost of one command per line, not one tree.
//
// A command is validated by building its device's whole tree (Config::validate); doing that after
// every line made a batch of n class adds cost n builds of up to n classes (10k lines: 83 s). Here
// a line runs with that build deferred (its own checks, tc's parse of its options and the edit's
// kernel checks, all run): the lines since the last settled state are pending, and the state is
// settled — every device built once — at the end, before a line that shows something, and when a
// line fails. If it does not build, a binary search over the pending lines (replayed from the
// settled state before them) finds the first line after which it stops building, as
// Config::parse() does for a file; that line then runs again with every check, so its error, its
// FILE:LINE and what it leaves are those of a line-by-line run. A line that fails its own checks
// (which run before the build, and the same in both modes) is reported with its own error once
// the lines before it are settled, and the state before it is restored. Warnings (htb's quantum)
// are told when their line is settled, in line order, before any later error.
//
// The search is sound because a tree that does not build stays so while lines only add: an add
// (or a class change: its options, checked on the line) cannot repair an earlier line. A line
// that may (a del, a replace, a qdisc change, a link set; an add that took a leaf's qdisc away) is
// therefore run on a settled state whenever a pending line could have failed to build; a del
// alone never fails to build, so a run of dels settles once.
//
// Cost: n lines that add or change classes, O(n log n); a line that may repair, after such lines,
// one build; each failing line about one copy of the configuration (as before: a failed command
// restores its device from a copy).
#include <algorithm>
#include <exception>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.hpp"
#include "tc/config_model.hpp"
#include "tc/config_parts.hpp"
#include "tc/internal.hpp"
#include "tc/tc_error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

class BatchRun {
 public:
  BatchRun(Config& cfg, std::string_view name, bool force, const Config::ShowOptions& show,
           std::ostream& out, std::ostream& err)
      : cfg_(cfg), name_(name), force_(force), show_(show), out_(out), err_(err) {}

  int run(std::string_view text, bool& changed);

 private:
  struct Line {
    std::size_t no;         // 1-based, as tc counts
    std::string_view text;  // never blank
  };
  struct Pending {
    std::size_t line;  // index into lines_
    bool changed = false;
    std::vector<std::string> warnings;
  };
  enum class Outcome { ok, failed, exit };
  // What a line may do to a tree that does not build (see the file comment).
  enum class Effect { grows, shrinks, changes };
  static Effect effect_of(const std::vector<std::string>& words);
  // Sets a configuration's defer_build for a scope.
  class DeferBuild {
   public:
    explicit DeferBuild(bool& flag) : flag_(flag) { flag_ = true; }
    ~DeferBuild() { flag_ = false; }
    DeferBuild(const DeferBuild&) = delete;
    DeferBuild& operator=(const DeferBuild&) = delete;

   private:
    bool& flag_;
  };

  void execute(Config& cfg, std::size_t i, const Config::ShowOptions& show, bool& changed) const;
  // Runs line i with the tree build deferred: null, or its error (cfg_ then to be restored).
  std::exception_ptr deferred(std::size_t i, Effect effect);
  uint64_t removals() const;
  void restore();  // cfg_: the settled state with the pending lines, after a line failed
  Config replay(std::size_t count) const;  // the checkpoint with pending_[0, count) applied
  void accept(std::size_t count);          // pending_[0, count) are done
  // Builds the pending state. Returns nullopt if it builds (the pending lines are then done),
  // else the index of the first line at fault, cfg_ holding the state before it.
  std::optional<std::size_t> settle();
  Outcome strict(std::size_t i);  // line i with every check
  Outcome failed(const std::exception_ptr& error, std::size_t i);
  bool go_on(Outcome o) const { return o == Outcome::ok || (o == Outcome::failed && force_); }

  Config& cfg_;
  std::string_view name_;
  bool force_;
  const Config::ShowOptions& show_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<Line> lines_;
  std::optional<Config> checkpoint_;  // the settled state before pending_[0]
  std::vector<Pending> pending_;
  bool may_not_build_ = false;  // a pending line that is not a del
  bool changed_ = false;
  int status_ = 0;
};

BatchRun::Effect BatchRun::effect_of(const std::vector<std::string>& words) {
  using config_detail::matches;
  if (words.size() < 2) return Effect::changes;
  const std::string& object = words[0];
  const std::string& verb = words[1];
  if (matches(object, "link")) {
    if (verb == "add") return Effect::grows;
    return matches(verb, "delete") ? Effect::shrinks : Effect::changes;
  }
  const bool is_class = matches(object, "class");
  if (!is_class && !matches(object, "qdisc")) return Effect::changes;
  // In parse_verb()'s order, which decides a prefix that two verbs share.
  if (matches(verb, "add")) return Effect::grows;
  if (matches(verb, "change") || matches(verb, "replace")) return is_class ? Effect::grows : Effect::changes;
  return matches(verb, "delete") ? Effect::shrinks : Effect::changes;
}

uint64_t BatchRun::removals() const {
  uint64_t n = 0;
  for (const auto& d : cfg_.state_->devs) n += d.removals;
  return n;
}

void BatchRun::execute(Config& cfg, std::size_t i, const Config::ShowOptions& show, bool& changed) const {
  const std::vector<std::string> words = batch_words(lines_[i].text);
  // A file that is not a tc batch file is named, never quoted: tc's line without the word.
  if (!is_tc_command(words))
    throw TcArgLine("Object on line " + std::to_string(lines_[i].no) + " is unknown, try \"tc help\".");
  changed = cfg.execute(words, out_, show);
}

std::exception_ptr BatchRun::deferred(std::size_t i, Effect effect) {
  if (pending_.empty()) checkpoint_ = cfg_;
  Pending p{i};
  Config::ShowOptions show = show_;
  show.warn = [&p](const std::string& line) { p.warnings.push_back(line); };
  try {
    const DeferBuild defer(cfg_.state_->defer_build);
    execute(cfg_, i, show, p.changed);
  } catch (const ConfigError&) {
    return std::current_exception();
  }
  pending_.push_back(std::move(p));
  may_not_build_ = may_not_build_ || effect != Effect::shrinks;
  return nullptr;
}

void BatchRun::restore() {
  if (!pending_.empty()) {
    cfg_ = replay(pending_.size());
    return;
  }
  cfg_ = std::move(*checkpoint_);
  checkpoint_.reset();
}

Config BatchRun::replay(std::size_t count) const {
  Config c = *checkpoint_;
  const DeferBuild defer(c.state_->defer_build);
  Config::ShowOptions quiet = show_;
  quiet.warn = nullptr;  // told once, from the first run (accept())
  for (std::size_t j = 0; j < count; ++j) {
    bool unused = false;
    execute(c, pending_[j].line, quiet, unused);  // it ran on this very state before: it works
  }
  return c;
}

void BatchRun::accept(std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) {
    changed_ = changed_ || pending_[j].changed;
    if (show_.warn)
      for (const std::string& w : pending_[j].warnings) show_.warn(w);
  }
  pending_.clear();
  checkpoint_.reset();
  may_not_build_ = false;
}

std::optional<std::size_t> BatchRun::settle() {
  if (pending_.empty()) return std::nullopt;
  if (cfg_.builds()) {
    accept(pending_.size());
    return std::nullopt;
  }
  std::size_t good = 0;               // the checkpoint with the first `good` lines builds
  std::size_t bad = pending_.size();  // with the first `bad`, it does not
  while (bad - good > 1) {
    const std::size_t mid = good + (bad - good) / 2;
    (replay(mid).builds() ? good : bad) = mid;
  }
  cfg_ = replay(good);
  const std::size_t at = pending_[good].line;
  accept(good);
  return at;
}

BatchRun::Outcome BatchRun::strict(std::size_t i) {
  try {
    bool changed = false;
    execute(cfg_, i, show_, changed);
    changed_ = changed_ || changed;
    return Outcome::ok;
  } catch (const ConfigError&) {
    return failed(std::current_exception(), i);
  }
}

BatchRun::Outcome BatchRun::failed(const std::exception_ptr& error, std::size_t i) {
  try {
    std::rethrow_exception(error);
  } catch (const ConfigError& e) {
    err_ << error_line(e) << "\n";
    status_ = exit_status(e);
    if (tc_exits(e)) return Outcome::exit;  // tc exits at once, naming no line
    err_ << "Command failed " << escape_user_text(name_) << ":" << lines_[i].no << "\n";
    status_ = 1;  // tc's batch mode: a failing line is exit status 1, whatever its own
  }
  return Outcome::failed;
}

int BatchRun::run(std::string_view text, bool& changed) {
  std::size_t no = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    ++no;
    if (!batch_words(line).empty()) lines_.push_back({no, line});
    at = end + 1;
  }
  std::size_t i = 0;
  for (;;) {
    const bool at_end = i == lines_.size();
    std::exception_ptr error;
    bool then_deferred = false;  // line i waits for the settled state, then runs deferred
    if (!at_end) {
      const std::vector<std::string> words = batch_words(lines_[i].text);
      if (is_tc_command(words) && !is_read_only_command(words)) {
        const Effect effect = effect_of(words);
        const bool could_repair = may_not_build_;
        const uint64_t removed = removals();
        if (effect != Effect::grows && could_repair) {
          then_deferred = true;
        } else if (!(error = deferred(i, effect))) {
          if (!(could_repair && removals() != removed)) {
            ++i;
            continue;
          }
          pending_.pop_back();  // an add that took something away: again, once settled
          restore();
          then_deferred = true;
        } else {
          restore();
        }
      }
    }
    // A show (of the state after the lines before it), a failed line, a line that may repair, the
    // end: on a settled state, and a line before at fault is the batch's failure.
    if (const std::optional<std::size_t> at_fault = settle()) {
      if (!go_on(strict(*at_fault))) break;
      i = *at_fault + 1;
      continue;
    }
    if (at_end) break;
    if (then_deferred) continue;  // nothing pending now: it runs as the first of a new batch
    if (!go_on(error ? failed(error, i) : strict(i))) break;
    ++i;
  }
  changed = changed_;
  return status_;
}

int run_batch(Config& cfg, std::string_view text, std::string_view name, bool force,
              const Config::ShowOptions& show, std::ostream& out, std::ostream& err, bool& changed) {
  return BatchRun(cfg, name, force, show, out, err).run(text, changed);
}

}  // namespace txpath::tc
