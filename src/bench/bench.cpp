// SPDX-License-Identifier: MIT
// The bench engine. One "run" = one strategy at one thread count on one TX queue count under one
// spin-park policy for one duration; a "point" aggregates the --repeat runs of a (strategy,
// threads, queues, park) tuple. Runs of different strategies, queue counts and park policies at
// the same thread count are interleaved in rounds (each round runs every row once, in an order
// shuffled from the seed: B/2q A/1q A/2q B/1q, then A/2q B/1q ...) so that ratios hold on a
// drifting machine; each round's figures are kept for the row's statistics (bench/stats.hpp).
//
// This file is the runner: run_bench() and run_bench_round(), the round loop, one run of a row
// (run_once) and the sink that checks arrivals. The other jobs have a file each (bench/
// bench_internal.hpp lists them): resolve.cpp, rounds.cpp, worker_wire.cpp, row_txpath.cpp,
// row_floor.cpp, row_kernel.cpp, measure.cpp, pacing.cpp, device_spec.cpp.
#include "bench/bench.hpp"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_internal.hpp"
#include "bench/dpdk_env.hpp"
#include "bench/live.hpp"
#include "bench/pcap_source.hpp"
#include "bench/real_path.hpp"
#include "net/sink.hpp"
#include "txpath/spin.hpp"

namespace txpath::bench_detail {

namespace {

Run run_once(const BenchConfig& cfg, const std::string& strategy, int threads, uint32_t queues,
             Delivery& delivery) {
  if (strategy == kKernelStrategy) return run_kernel_once(cfg, threads, delivery);
  if (strategy == kFloorStrategy) return run_floor_once(cfg, threads, queues, delivery);
  if (strategy == kDpdkPeer) return run_dpdk_once(cfg, threads, queues, delivery);
  if (strategy == kTestpmdPeer) return run_testpmd_once(cfg, threads, queues, delivery);
  if (queues == 1) return run_single_queue_once(cfg, strategy, threads, delivery);
  return run_multi_queue_once(cfg, strategy, threads, queues, delivery);
}

// Restores the process-wide spin-park policy when the bench ends (or throws).
class SpinParkRestore {
 public:
  SpinParkRestore() noexcept : saved_(spin_park()) {}
  ~SpinParkRestore() { set_spin_park(saved_); }
  SpinParkRestore(const SpinParkRestore&) = delete;
  SpinParkRestore& operator=(const SpinParkRestore&) = delete;

 private:
  bool saved_;
};

// One round at one thread count: every (queues, park, strategy) once, into `runs`.
void run_round(const BenchConfig& cfg, int threads, int round, Delivery& delivery,
               const std::function<void(const std::string&)>& progress, RoundProgress& counter,
               RunsByPoint& runs) {
  for (const auto& [queues, park, strategy] : round_order(cfg, threads, round)) {
    if (stop_requested(cfg)) return;
    ++counter.done;
    if (progress)
      progress(progress_line(cfg, counter.done, counter.total, strategy, threads, queues, park, round) +
               eta_note(cfg, counter));
    set_spin_park(park);  // no waiter of an earlier run is left: its queue is gone
    const bench_detail::RowScope row(strategy, threads, queues, park, round);  // on_interval's
    Run run = run_once(cfg, strategy, threads, queues, delivery);
    tell_live_note(run, progress, counter);
    runs[{queues, park, strategy}].push_back(std::move(run));
  }
}

// "round 2 at 4 threads failed: WHY" for what a round threw.
std::string round_failure(const std::exception_ptr& failed, int threads, int round) {
  std::string why = "unknown error";
  try {
    std::rethrow_exception(failed);
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
  }
  return "round " + std::to_string(round + 1) + " at " + std::to_string(threads) + " thread(s) failed: " + why;
}

// The sink (or the ifb testbed's counter) that checks arrivals for `delivery`, and with --source
// the capture its senders replay (into `capture`); the sink, null when none.
std::unique_ptr<Sink> start_delivery(const BenchConfig& cfg, Delivery& delivery,
                                     std::optional<bench_detail::Capture>& capture) {
  Probe probe(cfg.device);
  if (!cfg.source.empty()) {
    capture = load_source(cfg, probe.device());
    delivery.capture = &*capture;
  }
  std::unique_ptr<Sink> sink;
  if (auto sink_cfg = bench_detail::resolve_sink(cfg.sink, probe.device(),
                                                 frames_for(probe.device(), cfg.payload))) {
    sink = std::make_unique<Sink>(*sink_cfg);
    sink->start();
    delivery.sink = sink.get();
  } else if (cfg.sink == "auto") {
    delivery.null_nic = bench_detail::null_nic_of(probe.device());
  }
  return sink;
}

}  // namespace

}  // namespace txpath::bench_detail

namespace txpath {

const char* park_name(bool park) noexcept { return park ? "on" : "off"; }

bool bench_own_row(std::string_view strategy) noexcept {
  return strategy == kFloorStrategy || strategy == kDpdkPeer || without_queue_counts(strategy);
}

bool without_queue_counts(std::string_view strategy) noexcept {
  return strategy == kKernelStrategy || strategy == kTestpmdPeer;
}

std::vector<BenchPoint> run_bench(const BenchConfig& config,
                                  const std::function<void(const std::string&)>& progress) {
  const BenchConfig cfg = resolve_bench_config(config);
  const bench_detail::SpinParkRestore restore_policy;
  bench_detail::Delivery delivery;
  // With a round runner the workers check arrivals and load the capture, each its own.
  std::optional<bench_detail::Capture> capture;
  const std::unique_ptr<Sink> sink =
      cfg.round_runner ? nullptr : bench_detail::start_delivery(cfg, delivery, capture);
  std::vector<BenchPoint> points;
  bench_detail::RoundProgress counter;
  counter.total = cfg.threads.size() * cfg.queues.size() * cfg.park.size() *
                  cfg.strategies.size() * static_cast<std::size_t>(cfg.repeat);
  for (int threads : cfg.threads) {
    if (bench_detail::stop_requested(cfg)) break;
    bench_detail::RunsByPoint runs;
    bench_detail::LimitSamples limit;  // one sample a round (bench/handoff.hpp)
    std::exception_ptr failed;  // a round that failed after others had finished
    int failed_round = 0;
    // Interleaved: round 1 runs every (queues, park, strategy) once, then round 2, ... (A B A B).
    for (int round = 0; round < cfg.repeat && !bench_detail::stop_requested(cfg); ++round) {
      try {
        bench_detail::sample_limit(cfg, threads, limit);  // before the round: nothing else runs
        if (cfg.round_runner) {
          const std::string text = cfg.round_runner(threads, round);
          if (text.empty() && bench_detail::stop_requested(cfg)) break;  // stopped before the round ran
          for (const bench_detail::RowKey& key : bench_detail::read_round(cfg, threads, round, text, runs))
            bench_detail::tell_live_note(runs[key].back(), progress, counter);
        } else {
          bench_detail::run_round(cfg, threads, round, delivery, progress, counter, runs);
        }
      } catch (...) {
        const bool any_ran = !points.empty() || std::any_of(runs.begin(), runs.end(),
                                                            [](const auto& r) { return !r.second.empty(); });
        if (!any_ran) throw;  // nothing ran: the failure alone, as before
        failed = std::current_exception();
        failed_round = round;
        break;
      }
    }
    const std::size_t before = points.size();
    bench_detail::append_points(cfg, threads, runs, points);
    bench_detail::apply_limit(cfg, limit, threads, points, before);
    if (cfg.on_points && points.size() > before)
      cfg.on_points(std::span<const BenchPoint>(points).subspan(before));
    if (failed) throw BenchRoundFailed(bench_detail::round_failure(failed, threads, failed_round), points, failed);
  }
  return points;
}

std::string run_bench_round(const BenchConfig& config, int threads, int round,
                            const std::function<void(const std::string&)>& progress) {
  BenchConfig cfg = resolve_bench_config(config);
  cfg.round_runner = nullptr;  // this is where the round runs
  const auto at = std::find(cfg.threads.begin(), cfg.threads.end(), threads);
  if (at == cfg.threads.end() || round < 0 || round >= cfg.repeat)
    throw ConfigError("round " + std::to_string(round + 1) + " at " + std::to_string(threads) +
                      " threads is not in the configuration");
  const bench_detail::SpinParkRestore restore_policy;
  bench_detail::Delivery delivery;
  std::optional<bench_detail::Capture> capture;
  const std::unique_ptr<Sink> sink = bench_detail::start_delivery(cfg, delivery, capture);
  // The progress lines count as run_bench's do: the runs before this round come first.
  bench_detail::RoundProgress counter;
  const std::size_t per_round = cfg.queues.size() * cfg.park.size() * cfg.strategies.size();
  counter.total = cfg.threads.size() * per_round * static_cast<std::size_t>(cfg.repeat);
  counter.live_notes = false;  // its runs carry them to run_bench
  counter.done = (static_cast<std::size_t>(at - cfg.threads.begin()) * static_cast<std::size_t>(cfg.repeat) +
                  static_cast<std::size_t>(round)) * per_round;
  counter.done_elsewhere = counter.done;
  bench_detail::RunsByPoint runs;
  bench_detail::run_round(cfg, threads, round, delivery, progress, counter, runs);
  return bench_detail::round_text(runs);
}

}  // namespace txpath
