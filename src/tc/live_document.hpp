// SPDX-License-Identifier: MIT
// The live document (stats_document(), served by LiveStats) read back for `txpath tc -s`: one
// pass of a SAX reader into hash indexes of its entries, so that reading a document and looking
// up every entry of a tree is linear in the document (a JSON object of 65k classes as a DOM
// costs hundreds of MB, an ordered one a search of its keys per insert and per lookup). Private to
// src/tc/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "txpath/qdisc.hpp"
#include "txpath/qdisc_dump.hpp"

namespace txpath::tc {

// One entry of a document's "qdiscs" or "classes" object, as a reader takes it: a counter that
// is not a non-negative integer reads 0, an xstat that is not a [string, integer] pair is left
// out, an entry that is not an object has all zeros.
struct LiveEntry {
  QdiscStats stats;
  Xstats xstats;
  std::optional<std::string> kind;  // when the entry names it (a string)
  std::optional<DumpAttrs> options;  // when the entry has an "options" object
};

struct LiveEntries {
  std::optional<std::string> error;  // the document's "error" (a snapshot that failed)
  bool has_qdiscs = false, has_classes = false;  // those sections are objects
  std::unordered_map<std::string, LiveEntry> qdiscs, classes;  // a key given twice: the last
};

// `text` read as a live document; nullopt if it is not JSON or not an object.
std::optional<LiveEntries> read_live_document(std::string_view text);

}  // namespace txpath::tc
