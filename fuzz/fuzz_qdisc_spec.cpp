// SPDX-License-Identifier: MIT
// libFuzzer target: the qdisc spec parser (make_qdisc, every registered kind and its options).
// Any input must either build a qdisc or throw ConfigError with a one-line message; a built
// qdisc must print its options and take a few packets without breaking its accounting.
// Run: scripts/test-all.sh fuzz  (60 s), or ./build-fuzz/fuzz_qdisc_spec fuzz/corpus/qdisc_spec
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace {

txpath::Pool& pool() {
  static txpath::Pool p(txpath::PoolConfig{.packets = 64, .buffer_size = 256, .cache_size = 0});
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<txpath::Qdisc> q;
  try {
    q = txpath::make_qdisc(spec);
  } catch (const txpath::ConfigError& e) {
    const std::string_view what = e.what();
    if (what.empty() || what.find('\n') != std::string_view::npos) std::abort();  // one line
    return 0;
  }
  (void)txpath::tc::options_text(*q, true);  // its dump, as tc prints it (text and JSON)
  (void)txpath::tc::options_json(*q, true);
  // A few packets through it: the accounting invariant must hold afterwards.
  static const txpath::FrameTemplate frame;
  txpath::PacketList to_free;
  uint64_t queued = 0;
  for (uint32_t i = 0; i < 16; ++i) {
    txpath::Packet* p = pool().get();
    if (!p) break;
    p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, i));
    p->priority = i;
    p->flow_hash = i * 0x9e3779b9u;
    if (q->enqueue(p, to_free) != txpath::Verdict::drop) ++queued;
  }
  uint64_t out = 0;
  while (txpath::Packet* p = q->dequeue()) {
    to_free.push_back(p);
    ++out;
  }
  q->reset(to_free);
  if (q->qlen() != 0 || q->backlog() != 0) std::abort();
  txpath::free_packets(std::move(to_free));
  if (pool().free_count() != pool().capacity()) std::abort();  // nothing leaked or lost
  (void)queued;
  (void)out;
  return 0;
}
