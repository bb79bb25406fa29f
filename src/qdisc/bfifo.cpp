// SPDX-License-Identifier: MIT
// bfifo: byte-limited FIFO with tail drop.
#include "qdisc/fifo.hpp"

namespace txpath {

// tc's size printer (iproute2 lib/json_print_math.c, sprint_size): tc's sizes come back from
// the kernel rounded through psched ticks, so a size within 1 KiB of a whole number of MiB
// (and >= 1 MiB) prints as "<n>Mb", else one within 16 bytes of a whole number of KiB (and
// >= 1 KiB) as "<n>Kb", else "<n>b": 65535 -> "64Kb", 4294967295 -> "4096Mb", 1040 -> "1040b".
std::string format_tc_size(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024;
  constexpr uint64_t kMiB = kKiB * kKiB;
  const auto nearest = [bytes](uint64_t unit) { return (bytes + unit / 2) / unit; };  // rint
  const auto within = [bytes](uint64_t whole, uint64_t tolerance) {
    return (whole > bytes ? whole - bytes : bytes - whole) < tolerance;
  };
  if (bytes >= kMiB && within(nearest(kMiB) * kMiB, kKiB)) return std::to_string(nearest(kMiB)) + "Mb";
  if (bytes >= kKiB && within(nearest(kKiB) * kKiB, 16)) return std::to_string(nearest(kKiB)) + "Kb";
  return std::to_string(bytes) + "b";
}

Verdict BfifoQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  // 64-bit sum: backlog <= limit < 2^32 and len < 2^32, so it cannot wrap.
  if (q_.bytes() + p->len <= limit_) return enqueue_tail(p);
  return drop(p, to_free);
}

std::string BfifoQdisc::options() const { return "limit " + format_tc_size(limit_); }

}  // namespace txpath
