// SPDX-License-Identifier: MIT
// Sender threads for queue tests: `threads` senders start together and each sends `per_thread`
// real frames (FrameTemplate: sender id and sequence number in the payload) through a TxQueue,
// taking buffers from `pool` and waiting for buffers in flight when it is empty. `prepare(p, t,
// seq)` sets the per-packet fields the test varies (priority, flow hash). Returns, per sender, how
// many send() refused (too_big), which such tests expect to be 0.
//
// send_bursts_from_threads(): the same frames, handed over as a random mix (per-sender seed) of
// send() calls and send_burst() calls of 1..64 packets; each burst's answer is checked against
// the contract (return value = packets accepted, every status a verdict of an accepted packet),
// and a burst that breaks it counts as refused too.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::test {

// Runs body(t, cache) on `threads` threads that start together; each has its own pool cache.
inline void run_sender_threads(Pool& pool, int threads,
                               const std::function<void(int t, Pool::Cache& cache)>& body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      Pool::Cache cache(pool);
      // acquire: pairs with the release store below; all senders start together.
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(t, cache);
    });
  }
  // release: pairs with the senders' acquire loads.
  go.store(true, std::memory_order_release);
  for (auto& s : senders) s.join();
}

// A frame of sender t, sequence seq, from `cache` (waiting for completions while it is empty).
inline Packet* make_frame(Pool::Cache& cache, const FrameTemplate& tmpl, int t, uint64_t seq,
                          const std::function<void(Packet&, int, uint64_t)>& prepare) {
  Packet* p = cache.get();
  while (!p) {  // pool momentarily empty: buffers are in flight; wait for completions
    std::this_thread::yield();
    p = cache.get();
  }
  p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq));
  prepare(*p, t, seq);
  return p;
}

inline std::vector<uint64_t> send_from_threads(
    TxQueue& txq, Pool& pool, int threads, uint64_t per_thread,
    const std::function<void(Packet&, int thread, uint64_t seq)>& prepare,
    const FrameSpec& spec = {}) {
  std::vector<uint64_t> refused(static_cast<std::size_t>(threads), 0);
  const FrameTemplate tmpl(spec);
  run_sender_threads(pool, threads, [&](int t, Pool::Cache& cache) {
    for (uint64_t seq = 0; seq < per_thread; ++seq) {
      Packet* p = make_frame(cache, tmpl, t, seq, prepare);
      if (txq.send(p) == SendStatus::too_big) {
        ++refused[static_cast<std::size_t>(t)];
        cache.put(p);
      }
    }
  });
  return refused;
}

inline std::vector<uint64_t> send_bursts_from_threads(
    TxQueue& txq, Pool& pool, int threads, uint64_t per_thread,
    const std::function<void(Packet&, int thread, uint64_t seq)>& prepare) {
  constexpr std::size_t kMaxBurst = 64;
  std::vector<uint64_t> refused(static_cast<std::size_t>(threads), 0);
  const FrameTemplate tmpl;
  run_sender_threads(pool, threads, [&](int t, Pool::Cache& cache) {
    std::mt19937_64 rng(0x5eed + static_cast<uint64_t>(t));
    uint64_t& bad = refused[static_cast<std::size_t>(t)];
    Packet* burst[kMaxBurst];
    SendStatus status[kMaxBurst];
    for (uint64_t seq = 0; seq < per_thread;) {
      if (rng() % 4 == 0) {  // a quarter of the calls are plain send()s, in the same sequence
        Packet* p = make_frame(cache, tmpl, t, seq++, prepare);
        if (txq.send(p) == SendStatus::too_big) {
          ++bad;
          cache.put(p);
        }
        continue;
      }
      const std::size_t n = std::min<uint64_t>(1 + rng() % kMaxBurst, per_thread - seq);
      for (std::size_t i = 0; i < n; ++i) burst[i] = make_frame(cache, tmpl, t, seq++, prepare);
      const std::size_t accepted = txq.send_burst({burst, n}, {status, n});
      std::size_t verdicts = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (status[i] == SendStatus::too_big) {
          ++bad;
          cache.put(burst[i]);
        } else {
          ++verdicts;
        }
      }
      if (accepted != verdicts) ++bad;
    }
  });
  return refused;
}

}  // namespace txpath::test
