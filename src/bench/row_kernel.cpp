// SPDX-License-Identifier: MIT
// The kernel row (kKernelStrategy, bench.hpp): on a real device, every sender sends the same
// frames' UDP payloads through its own UDP socket into the kernel's own qdisc (bench/real_path.hpp:
// the route and the senders' sockets), measured as txpath's rows are (bench/measure.hpp).
#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "bench/measure.hpp"
#include "bench/real_path.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"

namespace txpath::bench_detail {

Run run_kernel_once(const BenchConfig& cfg, int threads, Delivery& delivery) {
  std::optional<Probe> probe(std::in_place, cfg.device);
  const FrameSpec spec = frames_for(probe->device(), cfg.payload);
  const FrameTemplate tmpl(spec);
  const auto traffic = sender_traffic(cfg, spec, threads, false, nullptr);
  const auto route = bench_detail::kernel_route(probe->device(), spec);
  if (!route) throw ConfigError("strategy kernel needs a real device (afpacket:IF, afxdp:IF or udp:HOST:PORT)");
  probe.reset();  // its sockets are not needed: the kernel row sends on its own sockets

  // Sockets first, so that an error surfaces before any thread starts.
  std::vector<std::unique_ptr<bench_detail::KernelSender>> sockets;
  for (int t = 0; t < threads; ++t)
    sockets.push_back(std::make_unique<bench_detail::KernelSender>(*route));
  auto senders = make_senders(threads);
  delivery.reset();
  const auto send_loop = [&](int t, RunFlags& flags) {
    Sender& me = senders[static_cast<std::size_t>(t)];
    bench_detail::KernelSender& sock = *sockets[static_cast<std::size_t>(t)];
    std::vector<std::byte> frame(tmpl.size());
    bench_detail::Pacer pacer = pacer_for(cfg, threads, traffic[static_cast<std::size_t>(t)]);
    flags.started();
    pacer.start(now_ns());
    uint64_t seq = 0, sent = 0, dropped = 0;
    while (flags.running()) {
      if (due_now(pacer, 1, flags) == 0) break;
      pacer.take(1);
      const std::size_t len = traffic[static_cast<std::size_t>(t)].write(frame, seq);
      const std::span<const std::byte> payload(frame.data() + kHeadersLen, len - kHeadersLen);
      const bool window = flags.in_window();
      if (me.timed(window, seq, [&] { return sock.send(payload); }) ==
          bench_detail::KernelSender::Result::sent) {
        me.sent.store(++sent, std::memory_order_relaxed);  // relaxed: see Sender::sent
        if (window) ++me.accepted_in_window;
      } else {
        me.dropped.store(++dropped, std::memory_order_relaxed);  // relaxed: likewise
      }
      ++seq;
    }
  };
  const auto sum_sent = [&] {
    uint64_t n = 0;
    for (auto& s : senders) n += s.sent.load(std::memory_order_relaxed);  // relaxed: likewise
    return n;
  };
  const Window<uint64_t> w = measure(cfg, threads, delivery, send_loop, sum_sent);

  Run r;
  r.lock = "-";
  r.drained = true;  // nothing of ours is queued: the kernel holds what it accepted
  fill_window_figures(r, w.end - w.start, w, senders);
  for (auto& s : senders) {
    r.sent += s.sent.load(std::memory_order_relaxed);
    r.dropped += s.dropped.load(std::memory_order_relaxed);
  }
  r.submitted = r.sent + r.dropped;
  r.conserved = true;
  delivery.check(r.sent, r);
  return r;
}

}  // namespace txpath::bench_detail
