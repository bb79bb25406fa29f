// Sends 1000 frames through an installed txpath and checks they were all sent.
#include <txpath/frame.hpp>
#include <txpath/pool.hpp>
#include <txpath/txqueue.hpp>

#include <chrono>
#include <cstdio>

int main() {
  txpath::Pool pool;
  auto dev = txpath::make_device("null");
  auto txq = txpath::TxQueue::create(*dev, {.strategy = "rootlock", .lock = "mcs"});
  txpath::FrameTemplate frame;
  txpath::Pool::Cache cache(pool);
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    txpath::Packet* p = cache.get();
    p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, seq));
    txq->send(p);
  }
  if (!txq->drain(std::chrono::seconds(5))) return 1;
  const auto s = txq->stats();
  std::printf("sent %llu of %llu\n", static_cast<unsigned long long>(s.sent),
              static_cast<unsigned long long>(s.submitted));
  return s.sent == 1000 ? 0 : 1;
}
