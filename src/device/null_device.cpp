// SPDX-License-Identifier: MIT
#include "device/null_device.hpp"

#include <utility>

#include "txpath/pool.hpp"

namespace txpath {

NullDevice::~NullDevice() { free_packets(std::move(pending_)); }

std::string NullDevice::describe() const {
  return mtu() == 1500 ? std::string("null") : "null:mtu=" + std::to_string(mtu());
}

XmitResult NullDevice::xmit(Packet* p, bool more) noexcept {
  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  if (!more && pending_.empty()) {  // a doorbell for this packet alone (a lone sender's bypass)
    ring_and_complete_one(p);
    return XmitResult::ok;
  }
  pending_.push_back(p);
  if (!more) ring_and_complete(pending_);  // the doorbell: everything announced completes
  return XmitResult::ok;
}

uint64_t NullDevice::in_flight() const noexcept {
  // Two relaxed counter reads (written under tx_lock): a hint that may mix generations, so
  // clamp rather than underflow. Exact at quiescent points.
  const uint64_t done = completed_.get();
  const uint64_t sent = tx_packets_.get();
  return sent > done ? sent - done : 0;
}

}  // namespace txpath
