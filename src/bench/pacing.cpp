// SPDX-License-Identifier: MIT
// A run's frames and offered load (bench/measure.hpp, bench/bench_internal.hpp): each sender's
// traffic (generated, or its share of a capture: traffic.hpp) and pacer (pacer.hpp), the frames'
// addresses, the departure logs of the device's TX queues, and the capture itself.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "bench/measure.hpp"
#include "bench/pcap_source.hpp"
#include "net/testbed.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/real_device.hpp"

namespace txpath::bench_detail {

namespace {

constexpr uint64_t kPacedCatchUp = 32;  // a paced sender's largest catch-up burst

}  // namespace

FrameSpec frames_for(const Device& device, std::size_t payload) {
  FrameSpec spec;
  spec.payload = payload;
  device.address_frames(spec);
  if (const std::string ifname = link_interface(device); !ifname.empty()) address_to_testbed(spec, ifname);
  return spec;
}

std::vector<bench_detail::SenderTraffic> sender_traffic(const BenchConfig& cfg, const FrameSpec& spec,
                                                        int threads, bool own_flow,
                                                        const bench_detail::Capture* capture) {
  std::vector<bench_detail::SenderTraffic> out;
  for (int t = 0; t < threads; ++t) {
    const auto id = static_cast<uint32_t>(t);
    out.push_back(capture ? bench_detail::SenderTraffic::replayed(*capture, id, static_cast<uint32_t>(threads))
                          : bench_detail::SenderTraffic::generated(spec, id, cfg.flows, own_flow));
  }
  return out;
}

bench_detail::Pacer pacer_for(const BenchConfig& cfg, int threads, const bench_detail::SenderTraffic& traffic) {
  const uint64_t max_burst = std::max<uint64_t>(kPacedCatchUp, static_cast<uint64_t>(cfg.burst));
  if (cfg.replay_speed > 0 && !traffic.idle()) return traffic.replay_pacer(cfg.replay_speed, max_burst);
  const double per_sender = cfg.rate_per_sender_pps > 0 ? cfg.rate_per_sender_pps : cfg.rate_pps / threads;
  if (per_sender > 0) return bench_detail::Pacer::at_rate(per_sender, max_burst);
  return {};
}

double offered_mpps(const BenchConfig& cfg, int threads) {
  if (cfg.rate_per_sender_pps > 0) return cfg.rate_per_sender_pps * threads / 1e6;
  return cfg.rate_pps / 1e6;
}

void log_departures(NetDevice& device, std::vector<LatencyHistogram>& logs) {
  for (uint32_t q = 0; q < device.num_tx_queues() && q < logs.size(); ++q) device.tx_queue(q).set_departure_log(&logs[q]);
}

bench_detail::Capture load_source(const BenchConfig& cfg, const Device& device) {
  if (cfg.source_fd >= 0) return bench_detail::load_pcap_snapshot(cfg.source_fd, device.max_frame_len(), cfg.source.substr(5));
  return bench_detail::load_pcap(cfg.source.substr(5), device.max_frame_len());
}

void idle_until_stopped(const RunFlags& flags) {
  while (flags.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace txpath::bench_detail
