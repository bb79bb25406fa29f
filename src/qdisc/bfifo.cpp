// SPDX-License-Identifier: MIT
// bfifo: byte-limited FIFO with tail drop.
#include "qdisc/fifo.hpp"

namespace txpath {

std::string format_tc_size(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024;
  constexpr uint64_t kMiB = 1024 * 1024;
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "Mb";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "Kb";
  return std::to_string(bytes) + "b";
}

Verdict BfifoQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  // 64-bit sum: backlog <= limit < 2^32 and len < 2^32, so it cannot wrap.
  if (q_.bytes() + p->len <= limit_) return enqueue_tail(p);
  return drop(p, to_free);
}

std::string BfifoQdisc::options() const { return "limit " + format_tc_size(limit_); }

}  // namespace txpath
