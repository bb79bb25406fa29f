// SPDX-License-Identifier: MIT
// Pool over a registered region (Pool(region, frame_size)): where its buffers lie, the way
// between a packet and its offset, get/put through the shared list and a cache, and the regions
// it refuses. No privilege needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/real_path.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"
#include "txpath/real_device.hpp"

using namespace txpath;

namespace {

constexpr std::size_t kFrame = 256;
constexpr std::size_t kFrames = 8;
constexpr std::byte kGuard{0xa5};

// A 64-byte aligned region of kFrames frames with a guard frame on each side, which no buffer
// of the pool may reach.
struct GuardedRegion {
  alignas(64) std::byte bytes[(kFrames + 2) * kFrame];
  GuardedRegion() { std::fill(std::begin(bytes), std::end(bytes), kGuard); }
  std::span<std::byte> region() { return {bytes + kFrame, kFrames * kFrame}; }
  bool guards_intact() const {
    const auto intact = [](const std::byte* b) {
      return std::all_of(b, b + kFrame, [](std::byte x) { return x == kGuard; });
    };
    return intact(bytes) && intact(bytes + (kFrames + 1) * kFrame);
  }
};

std::string config_error(std::span<std::byte> region, std::size_t frame_size) {
  try {
    Pool pool(region, frame_size);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(PoolRegion, CarvesOneBufferPerFrameInsideTheRegion) {
  GuardedRegion mem;
  Pool pool(mem.region(), kFrame);
  EXPECT_EQ(pool.capacity(), kFrames);
  EXPECT_EQ(pool.buffer_size(), kFrame);
  EXPECT_EQ(pool.region().data(), mem.region().data());
  EXPECT_EQ(pool.region().size(), kFrames * kFrame);
  std::set<uint64_t> offsets;
  std::vector<Packet*> got;
  while (Packet* p = pool.get()) {
    EXPECT_EQ(p->capacity, kFrame);
    EXPECT_EQ(p->pool, &pool);
    const uint64_t off = pool.offset_of(*p);
    EXPECT_EQ(p->data, mem.region().data() + off);
    EXPECT_EQ(off % kFrame, 0u);
    EXPECT_EQ(pool.packet_at(off), p);
    EXPECT_EQ(pool.packet_at(off + kFrame - 1), p) << "any byte of the buffer names its packet";
    offsets.insert(off);
    std::fill(p->buffer().begin(), p->buffer().end(), std::byte{0x11});  // the whole buffer
    got.push_back(p);
  }
  EXPECT_EQ(got.size(), kFrames) << "every frame is a packet, and no more";
  EXPECT_EQ(offsets.size(), kFrames) << "no two packets share a frame";
  EXPECT_EQ(pool.packet_at(kFrames * kFrame), nullptr) << "past the region's end";
  EXPECT_EQ(pool.packet_at(UINT64_MAX), nullptr);
  EXPECT_TRUE(mem.guards_intact()) << "a buffer reaches outside the region";
  for (Packet* p : got) pool.put(p);
  EXPECT_EQ(pool.free_count(), kFrames);
}

TEST(PoolRegion, CachesGetAndPutAsAnOwnPoolDoes) {
  GuardedRegion mem;
  Pool pool(mem.region(), kFrame, 4);
  std::vector<Packet*> got;
  {
    Pool::Cache cache(pool);
    while (Packet* p = cache.get()) got.push_back(p);
    EXPECT_EQ(got.size(), kFrames) << "the cache refills until the region is exhausted";
    EXPECT_EQ(pool.free_count(), 0u);
    for (Packet* p : got) cache.put(p);
    EXPECT_LT(pool.free_count(), kFrames) << "some stay in the cache";
  }
  EXPECT_EQ(pool.free_count(), kFrames) << "the cache flushes on destruction";
  // A packet comes back fresh: len, priority and link reset, its buffer where it was.
  Packet* p = pool.get();
  p->len = 99;
  p->priority = 3;
  std::byte* const data = p->data;
  pool.put(p);
  Packet* q = pool.get();
  EXPECT_EQ(q, p);
  EXPECT_EQ(q->len, 0u);
  EXPECT_EQ(q->priority, 0u);
  EXPECT_EQ(q->data, data);
  pool.put(q);
}

// Pool::put() of one packet (the null device's doorbell for a lone sender's packet) goes into
// the freeing thread's cache of the pool, with no lock; a free hook still sees it, as a list of
// one; a thread without a cache puts it on the shared list.
TEST(PoolRegion, PutOfOnePacketGoesToTheFreeingThreadsCache) {
  GuardedRegion mem;
  Pool pool(mem.region(), kFrame, 4);
  Pool::Cache cache(pool);
  Packet* p = cache.get();
  ASSERT_NE(p, nullptr);
  const std::size_t shared = pool.free_count();
  pool.put(p);
  EXPECT_EQ(pool.free_count(), shared) << "into this thread's cache, not the shared list";
  EXPECT_EQ(cache.get(), p) << "the cache hands it out next (LIFO)";

  std::vector<Packet*> hooked;
  pool.set_free_hook([&](const PacketList& list) {
    for (Packet* q = list.front(); q; q = q->next) hooked.push_back(q);
  });
  pool.put(p);
  ASSERT_EQ(hooked.size(), 1u) << "a free hook sees every put";
  EXPECT_EQ(hooked[0], p);
  EXPECT_EQ(cache.get(), p) << "and the packet still goes to the cache";

  std::thread([&] { pool.put(p); }).join();
  EXPECT_EQ(pool.free_count(), shared + 1) << "a thread without a cache: the shared list";
  EXPECT_EQ(hooked.size(), 2u);
}

TEST(PoolRegion, LeavesTheRegionToItsOwner) {
  GuardedRegion mem;
  mem.region()[0] = std::byte{0x42};
  { Pool pool(mem.region(), kFrame); }
  EXPECT_EQ(mem.region()[0], std::byte{0x42}) << "the pool neither clears nor frees the region";
  EXPECT_TRUE(mem.guards_intact());
}

TEST(PoolRegion, RefusesARegionItCannotCarveInOneLine) {
  GuardedRegion mem;
  const std::span<std::byte> r = mem.region();
  const struct {
    std::span<std::byte> region;
    std::size_t frame;
    std::string says;
  } bad[] = {
      {{}, kFrame, "the region is empty"},
      {r.subspan(8, kFrame * 2), kFrame, "does not start on a 64-byte boundary"},
      {r.first(kFrame * 3 + 64), kFrame, "are not a whole number of 256-byte frames"},
      {r, 0, "frame size 0 is not a positive multiple of 64"},
      {r, 100, "frame size 100 is not a positive multiple of 64"},
      {r.first(kFrame), kFrame * 2, "not a whole number"},
  };
  for (const auto& b : bad) {
    const std::string what = config_error(b.region, b.frame);
    EXPECT_EQ(what.rfind("pool: ", 0), 0u) << what;
    EXPECT_NE(what.find(b.says), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_EQ(config_error(r.first(kFrame), kFrame), "accepted") << "one frame is a pool";
}

TEST(PoolRegion, AnOwnPoolAnswersTheSameQueries) {
  Pool pool(PoolConfig{.packets = 4, .buffer_size = 100, .cache_size = 2});
  EXPECT_EQ(pool.region().size(), 4 * pool.buffer_size());
  for (std::size_t i = 0; i < 4; ++i) {
    Packet* p = pool.get();
    EXPECT_EQ(pool.packet_at(pool.offset_of(*p)), p);
    EXPECT_EQ(p->capacity, 100u);
  }
}

TEST(PoolRegion, ModelDevicesHaveNoZeroCopyPool) {
  for (const char* spec : {"null", "nic"}) {
    auto dev = make_device(spec);
    EXPECT_EQ(zero_copy_pool(*dev), nullptr) << spec;
    bench_detail::SenderPools pools(BenchConfig{}, 1, 1, nullptr);
    Pool& own = pools.of(0);
    bench_detail::use_zero_copy_pool(*dev, pools);
    EXPECT_EQ(&pools.of(0), &own) << "the bench keeps its own pool";
  }
}

TEST(PoolRegion, AfXdpUmemSpecIsChecked) {
  for (const std::string spec : {"afxdp:lo,umem=262145", "afxdp:lo,umem=x", "afxdp:lo,umem=",
                                 "afxdp:lo,umem=1,umem=2"}) {
    try {
      make_device(spec);
      ADD_FAILURE() << "accepted " << spec;
    } catch (const DeviceError& e) {
      ADD_FAILURE() << spec << " reached the device: " << e.what();
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("device '" + spec + "': ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}
