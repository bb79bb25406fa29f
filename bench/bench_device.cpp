// SPDX-License-Identifier: MIT
// Devices, frames and clocks.
//
//  * BM_DeviceXmit32/<device>: one 32-packet batch per iteration, handed to Device::xmit() under
//    the device's tx_lock exactly as the driver loop does (DriverLoop::xmit_list): more = true for
//    all but the last packet, stop at a stopped queue (BQL or driver stop; the rest would be
//    requeued — here it goes back to the cache). Manual timing: only lock + xmits + unlock is
//    timed (read with now_ns()). Untimed, before each batch: 32 packets from a Pool::Cache, and
//    for the nic, poll() until the queue is awake and the ring has room for the whole batch, so
//    the ring never fills and the 10G wire's pace is not part of the measurement.
//    Items = packets the device accepted. Counters: pkts/batch (accepted per iteration; below 32
//    when BQL stopped the queue mid-batch) and pkts/doorbell.
//      null                          completes (frees) the batch at the doorbell
//      nic:pkt=0,doorbell=0          the model's own overhead (ring, BQL, clean-on-xmit, wire clock)
//      nic:pkt=0,doorbell=0,bql=0    the same without BQL
//      nic                           the defaults: 20 ns busy-wait per packet, 200 ns per doorbell
//  * BM_FrameWrite/<payload>: FrameTemplate::write() of a 32-byte and a 1458-byte payload frame
//    (74 and 1500 bytes) into a pool buffer.
//  * BM_NowNs, BM_SteadyClockNow: now_ns() (invariant-TSC clock where available) against
//    std::chrono::steady_clock::now() (vDSO clock_gettime).
//  * BM_BusyWaitNs/<ns>: what busy_wait_ns() really spends for the nic's pkt (20) and doorbell
//    (200) charges: at least one now_ns() and one cpu_relax() (PAUSE) past the deadline.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>

#include "bench_common.hpp"
#include "base/clock.hpp"
#include "device/nic_device.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "txpath/pool.hpp"

namespace {

using txpath::Packet;
using txpath::Pool;

constexpr int kBatch = 32;

void BM_DeviceXmit32(benchmark::State& state, const char* spec) {
  Pool pool(txpath::PoolConfig{.packets = 4096});
  (void)txpath::now_ns();  // calibrate the clock before the first timed iteration
  uint64_t accepted = 0;
  {
    Pool::Cache cache(pool);
    // Declared after the cache: destroyed first, handing its ring back to the pool.
    std::unique_ptr<txpath::Device> dev = txpath::make_device(spec);
    uint64_t ring = std::numeric_limits<uint64_t>::max() / 2;
    if (const auto* nic = dynamic_cast<const txpath::NicDevice*>(dev.get())) {
      ring = nic->config().ring;
    }
    const auto len = static_cast<uint32_t>(txpath::FrameTemplate().size());
    std::array<Packet*, kBatch> batch{};

    for (auto _ : state) {
      // Untimed: the completion side catches up (what the service thread's poll() does).
      while (dev->stopped() || dev->in_flight() + kBatch > ring) dev->poll();
      for (Packet*& p : batch) {
        p = cache.get();
        p->len = len;
      }

      const uint64_t t0 = txpath::now_ns();
      int sent = 0;
      {
        std::lock_guard tx(dev->tx_lock());
        for (; sent < kBatch; ++sent) {
          if (dev->stopped()) break;
          if (dev->xmit(batch[sent], sent + 1 < kBatch) != txpath::XmitResult::ok) break;
        }
      }
      const uint64_t t1 = txpath::now_ns();
      state.SetIterationTime(static_cast<double>(t1 - t0) * 1e-9);

      for (int i = sent; i < kBatch; ++i) cache.put(batch[i]);  // the driver loop's requeue
      accepted += static_cast<uint64_t>(sent);
    }

    const txpath::DeviceStats st = dev->stats();
    if (st.busy != 0) state.SkipWithError("the ring filled: xmit answered busy");
    state.counters["pkts/batch"] =
        state.iterations() ? static_cast<double>(accepted) / static_cast<double>(state.iterations())
                           : 0.0;
    state.counters["pkts/doorbell"] =
        st.doorbells ? static_cast<double>(st.tx_packets) / static_cast<double>(st.doorbells) : 0.0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(accepted));
  txpath::bench::expect_pool_full(state, pool);
}

BENCHMARK_CAPTURE(BM_DeviceXmit32, null, "null")->UseManualTime();
BENCHMARK_CAPTURE(BM_DeviceXmit32, nic_pkt0_doorbell0, "nic:pkt=0,doorbell=0")->UseManualTime();
BENCHMARK_CAPTURE(BM_DeviceXmit32, nic_pkt0_doorbell0_nobql, "nic:pkt=0,doorbell=0,bql=0")
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_DeviceXmit32, nic_defaults, "nic")->UseManualTime();

void BM_FrameWrite(benchmark::State& state) {
  const auto payload = static_cast<std::size_t>(state.range(0));
  const txpath::FrameTemplate frame(txpath::FrameSpec{.payload = payload});
  Pool pool(txpath::PoolConfig{.packets = 16});
  Packet* p = pool.get();
  uint64_t seq = 0;
  for (auto _ : state) {
    const std::size_t n = frame.write(p->buffer(), 7, seq++);
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * frame.size()));
  pool.put(p);
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_FrameWrite)->Arg(32)->Arg(1458);

void BM_NowNs(benchmark::State& state) {
  (void)txpath::now_ns();  // calibration (10 ms) happens on the first call, not in the loop
  for (auto _ : state) benchmark::DoNotOptimize(txpath::now_ns());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_NowNs);

void BM_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_SteadyClockNow);

void BM_BusyWaitNs(benchmark::State& state) {
  const auto ns = static_cast<uint64_t>(state.range(0));
  (void)txpath::now_ns();
  for (auto _ : state) txpath::busy_wait_ns(ns);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_BusyWaitNs)->Arg(20)->Arg(200);

}  // namespace
