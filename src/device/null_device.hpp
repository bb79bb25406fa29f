// SPDX-License-Identifier: MIT
// `null`: a device that accepts every packet at zero cost and completes it at the doorbell.
//
// Accepted packets wait on a local list until the doorbell (a call with more == false), which
// hands the whole batch back to the pools with free_packets() — so the pool round trip and the
// xmit_more batching are exercised, but nothing else costs anything. No BQL, never busy, never
// stops. Pools must outlive the device (the destructor returns any unannounced packets).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "txpath/device.hpp"
#include "txpath/packet.hpp"

namespace txpath {

class NullDevice final : public Device {
 public:
  explicit NullDevice(uint32_t mtu = 1500) : Device(mtu) { set_lltx(); }
  ~NullDevice() override;

  std::string_view kind() const noexcept override { return "null"; }
  std::string describe() const override;
  XmitResult xmit(Packet* p, bool more) noexcept override;
  bool xmit_more_pays() const noexcept override { return false; }  // the doorbell only frees
  uint64_t in_flight() const noexcept override;

 private:
  PacketList pending_;  // accepted with more == true, not yet doorbelled; guarded by tx_lock
};

}  // namespace txpath
