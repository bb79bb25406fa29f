// SPDX-License-Identifier: MIT
// Sender threads for queue tests: `threads` senders start together and each sends `per_thread`
// real frames (FrameTemplate: sender id and sequence number in the payload) through a TxQueue,
// taking buffers from `pool` and waiting for buffers in flight when it is empty. `prepare(p, t,
// seq)` sets the per-packet fields the test varies (priority, flow hash). Returns, per sender, how
// many send() refused (too_big), which such tests expect to be 0.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::test {

inline std::vector<uint64_t> send_from_threads(
    TxQueue& txq, Pool& pool, int threads, uint64_t per_thread,
    const std::function<void(Packet&, int thread, uint64_t seq)>& prepare,
    const FrameSpec& spec = {}) {
  std::atomic<bool> go{false};
  std::vector<std::thread> senders;
  std::vector<uint64_t> refused(static_cast<std::size_t>(threads), 0);
  const FrameTemplate tmpl(spec);
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      Pool::Cache cache(pool);
      // acquire: pairs with the release store below; all senders start together.
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (uint64_t seq = 0; seq < per_thread; ++seq) {
        Packet* p = cache.get();
        while (!p) {  // pool momentarily empty: buffers are in flight; wait for completions
          std::this_thread::yield();
          p = cache.get();
        }
        p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq));
        prepare(*p, t, seq);
        if (txq.send(p) == SendStatus::too_big) {
          ++refused[static_cast<std::size_t>(t)];
          cache.put(p);
        }
      }
    });
  }
  // release: pairs with the senders' acquire loads.
  go.store(true, std::memory_order_release);
  for (auto& s : senders) s.join();
  return refused;
}

}  // namespace txpath::test
