// SPDX-License-Identifier: MIT
// See live_document.hpp. The reader follows the document's shape by depth:
//   1 {"dev": ..., "error": "...", "qdiscs": {...}, "classes": {...}}
//   2   "KEY": {...}                                 (an entry of a section)
//   3     "bytes": N, ..., "kind": "K", "xstats": [...], "options": {...}
//   4       ["name", V]  or  "option": value         (an xstat, an option)
//   5         the pair's two values, or an option's array of numbers
// Anything else is skipped.
#include "tc/live_document.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace txpath::tc {

namespace {

using SaxJson = nlohmann::json;

class LiveDocumentReader {
 public:
  LiveEntries doc;
  bool is_object = false;

  bool null() { return scalar(Value{}); }
  bool boolean(bool v) { return scalar(Value{.type = Value::kFlag, .flag = v}); }
  bool number_integer(SaxJson::number_integer_t v) { return scalar(Value{.type = Value::kSigned, .i = v}); }
  bool number_unsigned(SaxJson::number_unsigned_t v) { return scalar(Value{.type = Value::kUnsigned, .u = v}); }
  bool number_float(SaxJson::number_float_t, const std::string&) { return scalar(Value{}); }
  bool string(std::string& v) { return scalar(Value{.type = Value::kText, .s = &v}); }
  bool binary(SaxJson::binary_t&) { return scalar(Value{}); }
  bool key(std::string& k) {
    if (depth_ == 1) key1_ = k;
    else if (depth_ == 2) key2_ = k;
    else if (depth_ == 3) key3_ = k;
    else if (depth_ == 4) key4_ = k;
    return true;
  }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  struct Value {
    enum Type { kOther, kFlag, kSigned, kUnsigned, kText } type = kOther;
    bool flag = false;
    int64_t i = 0;
    uint64_t u = 0;
    const std::string* s = nullptr;
  };
  enum class In { nothing, entry, xstats, pair, options, option_array };

  // A value at the current depth (a container's start counts as one of type `other`).
  bool scalar(const Value& v) {
    if (depth_ == 1 && v.type == Value::kText) {
      if (key1_ == "error") doc.error = *v.s;
    } else if (depth_ == 2 && section_) {
      (*section_)[key2_] = LiveEntry{};  // not an object: an entry of zeros
    } else if (depth_ == 3 && in_ == In::entry) {
      entry_value(v);
    } else if (depth_ == 5 && in_ == In::pair) {
      if (pair_count_ == 0 && v.type == Value::kText) pair_name_ = *v.s;
      else if (pair_count_ == 1 && v.type == Value::kSigned) pair_value_ = v.i;
      else if (pair_count_ == 1 && v.type == Value::kUnsigned) pair_value_ = static_cast<int64_t>(v.u);
      else pair_ok_ = false;
      ++pair_count_;
    } else if (depth_ == 4 && in_ == In::options) {
      option_value(v);
    } else if (depth_ == 5 && in_ == In::option_array && v.type == Value::kUnsigned) {
      numbers_.push_back(v.u);
    }
    return true;
  }

  void entry_value(const Value& v) {
    if (key3_ == "kind") {
      if (v.type == Value::kText) entry_->kind = *v.s;
      else entry_->kind.reset();
      return;
    }
    static constexpr std::pair<const char*, uint64_t QdiscStats::*> kCounters[] = {
        {"bytes", &QdiscStats::bytes},       {"packets", &QdiscStats::packets},
        {"drops", &QdiscStats::drops},       {"overlimits", &QdiscStats::overlimits},
        {"requeues", &QdiscStats::requeues}, {"backlog", &QdiscStats::backlog},
        {"qlen", &QdiscStats::qlen}};
    for (const auto& [name, field] : kCounters)
      if (key3_ == name) entry_->stats.*field = v.type == Value::kUnsigned ? v.u : 0;
  }

  void option_value(const Value& v) {
    DumpAttrs& a = *entry_->options;
    if (v.type == Value::kFlag) a.flag(key4_, v.flag);
    else if (v.type == Value::kUnsigned) a.number(key4_, v.u);
    else if (v.type == Value::kSigned) a.signed_number(key4_, v.i);
    else if (v.type == Value::kText) a.word(key4_, *v.s);
  }

  bool open(bool object) {
    if (depth_ == 0) is_object = object;
    if (depth_ == 1 && object && (key1_ == "qdiscs" || key1_ == "classes")) {
      const bool qdiscs = key1_ == "qdiscs";
      (qdiscs ? doc.has_qdiscs : doc.has_classes) = true;
      section_ = qdiscs ? &doc.qdiscs : &doc.classes;
    } else if (depth_ == 1) {
      section_ = nullptr;
    }
    if (depth_ == 2 && section_) {
      LiveEntry& e = (*section_)[key2_] = LiveEntry{};
      entry_ = object ? &e : nullptr;
      in_ = object ? In::entry : In::nothing;
    } else if (depth_ == 3 && in_ == In::entry) {
      entry_value(Value{});  // a counter that is a container reads 0
      if (!object && key3_ == "xstats") {
        entry_->xstats.clear();  // a key given twice: the last
        in_ = In::xstats;
      }
      else if (object && key3_ == "options") {
        entry_->options.emplace();
        in_ = In::options;
      }
    } else if (depth_ == 4 && in_ == In::xstats && !object) {
      in_ = In::pair;
      pair_count_ = 0;
      pair_ok_ = true;
    } else if (depth_ == 4 && in_ == In::options && !object) {
      in_ = In::option_array;
      numbers_.clear();
    } else if (depth_ == 5 && in_ == In::pair) {
      pair_ok_ = false;  // a pair's value that is a container
      ++pair_count_;
    }
    ++depth_;
    return true;
  }

  bool close() {
    --depth_;
    if (depth_ == 4 && in_ == In::pair) {
      if (pair_ok_ && pair_count_ == 2) entry_->xstats.emplace_back(std::move(pair_name_), pair_value_);
      in_ = In::xstats;
    } else if (depth_ == 4 && in_ == In::option_array) {
      entry_->options->array(key4_, std::move(numbers_));
      numbers_.clear();
      in_ = In::options;
    } else if (depth_ == 3 && (in_ == In::xstats || in_ == In::options)) {
      in_ = In::entry;
    } else if (depth_ == 2) {
      entry_ = nullptr;
      in_ = In::nothing;
    } else if (depth_ == 1) {
      section_ = nullptr;
    }
    return true;
  }

  int depth_ = 0;
  std::string key1_, key2_, key3_, key4_;
  std::unordered_map<std::string, LiveEntry>* section_ = nullptr;
  LiveEntry* entry_ = nullptr;
  In in_ = In::nothing;
  std::string pair_name_;
  int64_t pair_value_ = 0;
  int pair_count_ = 0;
  bool pair_ok_ = true;
  std::vector<uint64_t> numbers_;
};

}  // namespace

std::optional<LiveEntries> read_live_document(std::string_view text) {
  LiveDocumentReader r;
  if (!SaxJson::sax_parse(text.begin(), text.end(), &r) || !r.is_object) return std::nullopt;
  return std::move(r.doc);
}

}  // namespace txpath::tc
