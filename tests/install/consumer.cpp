// Sends 1000 frames through an installed txpath and checks they were all sent; then configures
// a classful qdisc through its class operations (tc class add), as a consumer can.
#include <txpath/error.hpp>
#include <txpath/frame.hpp>
#include <txpath/pool.hpp>
#include <txpath/qdisc.hpp>
#include <txpath/qdisc_options.hpp>
#include <txpath/tc.hpp>
#include <txpath/txqueue.hpp>

#include <chrono>
#include <cstdio>
#include <string_view>
#include <vector>

namespace {

// htb with one class 1:10 (rate 1mbit, ceil 2mbit); a bad class option is a ConfigError.
bool add_an_htb_class() {
  auto htb = txpath::make_qdisc("htb default 10");
  const std::vector<std::string_view> words = {"rate", "1mbit", "ceil", "2mbit"};
  txpath::add_class(*htb, 0x10, 0, txpath::QdiscOptions(words, "class \"1:10 htb\""), {});
  txpath::ClassOps* ops = htb->class_ops();
  if (ops == nullptr || ops->classes().size() != 1 || ops->child(0x10) == nullptr) return false;
  std::printf("class htb 1:10 %s\n", txpath::tc::class_options_text(*htb, 0x10).c_str());
  const std::vector<std::string_view> bad = {"rate", "fast"};
  try {
    ops->add_class(0x20, 0, txpath::QdiscOptions(bad, "class \"1:20 htb\""), {});
  } catch (const txpath::ConfigError& e) {
    std::printf("%s\n", e.what());
    return ops->classes().size() == 1;
  }
  return false;
}

}  // namespace

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
  if (s.sent != 1000) return 1;
  return add_an_htb_class() ? 0 : 1;
}
