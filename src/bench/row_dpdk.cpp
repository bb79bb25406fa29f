// SPDX-License-Identifier: MIT
// peer:dpdk (bench/dpdk_env.hpp): DPDK's canonical many-producers-one-queue pattern, built on
// DPDK's own libraries. N sender threads take mbufs from one rte_mempool, write the bench's
// frames into them and enqueue them on an rte_ring (multi-producer, single-consumer); one TX
// thread per TX queue dequeues bursts of up to 32 and hands them to rte_eth_tx_burst() on the
// DPDK driver for the same device (dpdk_device()). Backpressure as DPDK applications do it: a
// sender whose enqueue (or mbuf allocation) fails waits and tries again, it drops nothing; a TX
// thread whose burst the driver does not take whole hands the rest again. Measured as the other
// rows are (bench/measure.hpp). docs/bench.md, "The DPDK peers".
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "bench/dpdk_env.hpp"
#include "bench/measure.hpp"
#include "txpath/error.hpp"

#if TXPATH_HAVE_DPDK
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#endif

namespace txpath::bench_detail {

#if !TXPATH_HAVE_DPDK

std::optional<std::string> dpdk_unavailable(const std::string&) {
  return std::string("this build has no DPDK (Debian: apt-get install libdpdk-dev, then rebuild)");
}

Run run_dpdk_once(const BenchConfig&, int, uint32_t, Delivery&) {
  throw ConfigError("peer:dpdk: this build has no DPDK");
}

#else

namespace {

constexpr unsigned kTxBurst = 32;        // a TX thread's dequeue and rte_eth_tx_burst() size
constexpr unsigned kRingSize = 1024;     // each TX queue's rte_ring (a power of two)
constexpr unsigned kTxDescriptors = 1024;
constexpr unsigned kPoolCache = 128;     // the mempool's per-lcore cache
constexpr uint64_t kStopGrace = 1'000'000'000;  // ns a refused burst is retried after the stop

std::string& runtime_dir() {
  static std::string dir;
  return dir;
}

void remove_runtime_dir() {
  if (runtime_dir().empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(runtime_dir(), ignored);
}

// The EAL, once per process: main lcore on the first CPU this process may run on, no hugepages,
// no PCI, no shared files, quiet. The calling thread's CPU mask is given back afterwards (the
// EAL pins its main lcore). The error, empty when it started.
const std::string& eal_error() {
  static const std::string error = [] {
    cpu_set_t saved;
    CPU_ZERO(&saved);
    if (sched_getaffinity(0, sizeof saved, &saved) != 0) return std::string("sched_getaffinity failed");
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) ++first;
    std::vector<std::string> args = {"txpath", "--no-huge", "-m", "512", "--no-shconf", "--no-pci",
                                     "--no-telemetry", "--log-level=3", "-l", std::to_string(first),
                                     "--file-prefix=txpath-" + std::to_string(::getpid())};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    const int rc = rte_eal_init(static_cast<int>(argv.size()), argv.data());
    sched_setaffinity(0, sizeof saved, &saved);
    if (rc < 0) return std::string(rte_strerror(rte_errno));
    runtime_dir() = rte_eal_get_runtime_dir();
    std::atexit(remove_runtime_dir);  // the folder the EAL made for this process goes with it
    return std::string();
  }();
  return error;
}

// The EAL started in a child process (fork, then exit): whether it can start here, without
// starting it in this one (a bench forks its round workers, and DPDK does not survive a fork).
// Asked once a process. The error, empty when it started.
const std::string& eal_error_in_child() {
  static const std::string error = [] {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return std::string("fork failed");
    }
    if (pid == 0) {
      ::close(fds[0]);
      const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);  // the EAL's own lines
      if (devnull >= 0) {
        ::dup2(devnull, 1);
        ::dup2(devnull, 2);
      }
      const std::string& e = eal_error();
      (void)!::write(fds[1], e.data(), e.size());
      remove_runtime_dir();
      ::_exit(e.empty() ? 0 : 1);
    }
    ::close(fds[1]);
    std::string out;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      if (out.size() < 4096) out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) return "the EAL's trial process died of signal " + std::to_string(WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && out.empty()) return std::string("the EAL's trial failed");
    return out;
  }();
  return error;
}

unsigned next_instance() {
  static std::atomic<unsigned> n{0};  // relaxed: only unique names are asked of it
  return n.fetch_add(1, std::memory_order_relaxed);
}

// A DPDK thread identity for a thread of ours (a lcore id: the mempool's per-lcore cache),
// given back when the thread is done; best effort (without one the mempool goes uncached).
class LcoreScope {
 public:
  LcoreScope() noexcept : registered_(rte_thread_register() == 0) {}
  ~LcoreScope() {
    if (registered_) rte_thread_unregister();
  }
  LcoreScope(const LcoreScope&) = delete;
  LcoreScope& operator=(const LcoreScope&) = delete;

 private:
  bool registered_;
};

// One run's DPDK objects: the mempool, a ring per TX queue, the probed and started port; all
// gone with it (port stopped, closed and removed).
class DpdkRig {
 public:
  // `preemptible`: more of our threads than CPUs to run them (DPDK's classic multi-producer
  // ring and mempool stall every thread behind one preempted in the middle of an operation:
  // DPDK's guide (rte_ring, "MT_RTS") gives its relaxed-tail-sync mode for that case).
  DpdkRig(const DpdkDevice& dev, uint32_t queues, int threads, int burst, uint16_t data_room, bool preemptible)
      : dev_(dev) {
    const unsigned n = next_instance();
    const unsigned mbufs = 2 * kRingSize * queues + kTxDescriptors * queues +
                           static_cast<unsigned>(threads + 2) * (kPoolCache * 3 / 2 + static_cast<unsigned>(burst));
    const std::string pool_name = "txp_pool" + std::to_string(n);
    pool_ = rte_pktmbuf_pool_create_by_ops(pool_name.c_str(), mbufs, kPoolCache, 0, data_room,
                                           static_cast<int>(rte_socket_id()), preemptible ? "ring_mt_rts" : nullptr);
    if (pool_ == nullptr) fail("rte_pktmbuf_pool_create (" + std::to_string(mbufs) + " mbufs)");
    for (uint32_t q = 0; q < queues; ++q) {
      rte_ring* r = rte_ring_create(("txp_ring" + std::to_string(n) + "_" + std::to_string(q)).c_str(), kRingSize,
                                    static_cast<int>(rte_socket_id()),
                                    RING_F_SC_DEQ | (preemptible ? RING_F_MP_RTS_ENQ : 0));
      if (r == nullptr) fail("rte_ring_create");
      rings_.push_back(r);
    }
    if (rte_dev_probe(dev_.devargs.c_str()) != 0) fail("probing " + dev_.devargs);
    probed_ = true;
    if (rte_eth_dev_get_port_by_name(dev_.name.c_str(), &port_) != 0) fail("no port " + dev_.name);
    start_port(static_cast<uint16_t>(queues));
  }
  ~DpdkRig() {
    if (started_) rte_eth_dev_stop(port_);
    if (probed_) {
      rte_eth_dev_close(port_);
      rte_eal_hotplug_remove("vdev", dev_.name.c_str());
    }
    for (rte_ring* r : rings_) rte_ring_free(r);
    if (pool_ != nullptr) rte_mempool_free(pool_);
  }
  DpdkRig(const DpdkRig&) = delete;
  DpdkRig& operator=(const DpdkRig&) = delete;

  rte_mempool* pool() const noexcept { return pool_; }
  rte_ring* ring(std::size_t q) const noexcept { return rings_[q]; }
  uint16_t port() const noexcept { return port_; }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw ConfigError("peer:dpdk: " + what + " failed: " + rte_strerror(rte_errno));
  }
  void start_port(uint16_t queues) {
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(port_, queues, queues, &conf) != 0) fail("rte_eth_dev_configure");
    const int socket = rte_eth_dev_socket_id(port_);
    for (uint16_t q = 0; q < queues; ++q) {
      if (rte_eth_rx_queue_setup(port_, q, 256, static_cast<unsigned>(socket), nullptr, pool_) != 0)
        fail("rte_eth_rx_queue_setup");
      if (rte_eth_tx_queue_setup(port_, q, kTxDescriptors, static_cast<unsigned>(socket), nullptr) != 0)
        fail("rte_eth_tx_queue_setup");
    }
    if (rte_eth_dev_start(port_) != 0) fail("rte_eth_dev_start");
    started_ = true;
  }

  DpdkDevice dev_;
  rte_mempool* pool_ = nullptr;
  std::vector<rte_ring*> rings_;
  uint16_t port_ = 0;
  bool probed_ = false, started_ = false;
};

// A TX thread's counts. relaxed (all three): owner-written, read by the main thread at the
// window's edges and after the join (which orders the last).
struct alignas(64) TxCounts {
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> bursts{0};
  std::atomic<uint64_t> dropped{0};  // refused past kStopGrace after the stop
};

// TX queue q's thread: dequeue a burst, hand it to the driver until it took all of it, count.
// Ends when `senders_done` is set and the ring is empty.
void tx_loop(const DpdkRig& rig, uint16_t q, TxCounts& c, const std::atomic<bool>& senders_done) {
  const LcoreScope lcore;
  std::array<rte_mbuf*, kTxBurst> pkts{};
  uint64_t sent = 0, bursts = 0;
  for (;;) {
    const unsigned n = rte_ring_sc_dequeue_burst(rig.ring(q), reinterpret_cast<void**>(pkts.data()), kTxBurst, nullptr);
    if (n == 0) {
      // acquire: pairs with the release store after the senders' join: every enqueue is in the ring
      if (senders_done.load(std::memory_order_acquire) && rte_ring_empty(rig.ring(q))) break;
      rte_pause();
      continue;
    }
    unsigned done = 0;
    uint64_t give_up_ns = 0;
    while (done < n) {
      done += rte_eth_tx_burst(rig.port(), q, pkts.data() + done, static_cast<uint16_t>(n - done));
      if (done == n) break;
      if (senders_done.load(std::memory_order_acquire)) {  // acquire: as above
        if (give_up_ns == 0) give_up_ns = now_ns() + kStopGrace;
        if (now_ns() >= give_up_ns) {
          rte_pktmbuf_free_bulk(pkts.data() + done, n - done);
          // relaxed: see TxCounts
          c.dropped.store(c.dropped.load(std::memory_order_relaxed) + (n - done), std::memory_order_relaxed);
          break;
        }
      }
      rte_pause();
    }
    sent += done;
    c.sent.store(sent, std::memory_order_relaxed);      // relaxed: see TxCounts
    c.bursts.store(++bursts, std::memory_order_relaxed);
  }
}

// Enqueues `n` mbufs on `ring`, waiting while it is full (backpressure: nothing is dropped).
void enqueue_all(rte_ring* ring, rte_mbuf* const* mbufs, unsigned n) {
  unsigned done = 0;
  for (int spins = 0; done < n;) {
    done += rte_ring_enqueue_burst(ring, reinterpret_cast<void* const*>(mbufs + done), n - done, nullptr);
    if (done == n) return;
    if (++spins < 64) rte_pause();
    else std::this_thread::yield();  // the TX thread may share our CPU
  }
}

// Sender t's loop: mbufs from the pool, the bench's frames written into them, onto its queue's
// ring in bursts of cfg.burst.
auto dpdk_send_loop(const DpdkRig& rig, uint32_t queues, const std::vector<SenderTraffic>& traffic,
                    std::vector<Sender>& senders, const BenchConfig& cfg) {
  return [&rig, queues, &traffic, &senders, &cfg](int t, RunFlags& flags) {
    const LcoreScope lcore;
    Sender& me = senders[static_cast<std::size_t>(t)];
    const SenderTraffic& frames = traffic[static_cast<std::size_t>(t)];
    rte_ring* ring = rig.ring(static_cast<uint32_t>(t) % queues);
    Pacer pacer = pacer_for(cfg, static_cast<int>(traffic.size()), frames);
    std::vector<rte_mbuf*> batch(static_cast<std::size_t>(cfg.burst));
    flags.started();
    if (frames.idle()) return idle_until_stopped(flags);
    pacer.start(now_ns());
    uint64_t seq = 0, submitted = 0;
    while (flags.running()) {
      const auto n = static_cast<unsigned>(due_now(pacer, batch.size(), flags));
      if (n == 0) break;
      if (rte_pktmbuf_alloc_bulk(rig.pool(), batch.data(), n) != 0) {  // every mbuf in flight
        std::this_thread::yield();
        continue;
      }
      for (unsigned i = 0; i < n; ++i) {
        rte_mbuf* m = batch[i];
        const std::span<std::byte> room(rte_pktmbuf_mtod(m, std::byte*), rte_pktmbuf_tailroom(m));
        m->data_len = static_cast<uint16_t>(frames.write(room, seq + i));
        m->pkt_len = m->data_len;
      }
      pacer.take(n);
      submitted += n;
      me.submitted.store(submitted, std::memory_order_relaxed);  // relaxed: see Sender::submitted
      const bool window = flags.in_window();
      me.timed(window, seq, [&] {
        enqueue_all(ring, batch.data(), n);
        return 0;
      }, n);
      if (window) me.accepted_in_window += n;
      seq += n;
    }
  };
}

// Each TX queue's counters, as the floor row's (summarize_run): its senders' submitted (sender t
// on queue t % queues), its TX thread's sent, dropped and bursts (the doorbells), what its ring
// still holds as queued.
std::vector<TxQueueStats> dpdk_stats(const DpdkRig& rig, const std::vector<std::unique_ptr<TxCounts>>& tx,
                                     const std::vector<Sender>& senders) {
  std::vector<TxQueueStats> out(tx.size());
  for (std::size_t t = 0; t < senders.size(); ++t)  // relaxed: see Sender::submitted
    out[t % out.size()].submitted += senders[t].submitted.load(std::memory_order_relaxed);
  for (std::size_t q = 0; q < out.size(); ++q) {
    const TxCounts& c = *tx[q];
    out[q].sent = c.sent.load(std::memory_order_relaxed);  // relaxed (three): see TxCounts
    out[q].dropped = c.dropped.load(std::memory_order_relaxed);
    out[q].device.doorbells = c.bursts.load(std::memory_order_relaxed);
    out[q].device.tx_packets = out[q].sent;
    out[q].queued = rte_ring_count(rig.ring(q));
  }
  return out;
}

}  // namespace

std::optional<std::string> dpdk_unavailable(const std::string& device_spec) {
  if (!dpdk_device(device_spec, 0, 1))
    return "DPDK has no driver for " + device_spec + " (peer:dpdk runs on null, afpacket:IF and afxdp:IF)";
  if (!eal_error_in_child().empty()) return "DPDK's EAL did not start: " + eal_error_in_child();
  return std::nullopt;
}

Run run_dpdk_once(const BenchConfig& cfg, int threads, uint32_t queues, Delivery& delivery) {
  const auto dev = dpdk_device(cfg.device, next_instance(), queues);
  if (!dev) throw ConfigError("peer:dpdk: DPDK has no driver for " + cfg.device);
  if (!eal_error().empty()) throw ConfigError("peer:dpdk: DPDK's EAL did not start: " + eal_error());
  std::optional<Probe> probe(std::in_place, cfg.device);
  const FrameSpec spec = frames_for(probe->device(), cfg.payload);
  probe.reset();  // DPDK's driver opens the interface itself
  const auto traffic = sender_traffic(cfg, spec, threads, queues > 1, delivery.capture);
  std::size_t longest = 0;
  for (const SenderTraffic& s : traffic) longest = std::max(longest, s.max_len());
  const std::size_t cpus = std::max<std::size_t>(1, sender_cpus(cfg, threads + static_cast<int>(queues)).size());
  const bool preemptible = !cfg.pin || static_cast<std::size_t>(threads) + queues > cpus;
  const DpdkRig rig(*dev, queues, threads, cfg.burst,
                    static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + std::max<std::size_t>(longest, 2048)), preemptible);

  std::vector<std::unique_ptr<TxCounts>> tx;
  std::vector<std::thread> tx_threads;
  std::atomic<bool> senders_done{false};
  for (uint32_t q = 0; q < queues; ++q) {
    tx.push_back(std::make_unique<TxCounts>());
    tx_threads.emplace_back([&, q] {
      if (cfg.pin) pin_to(cpu_for_sender(threads + static_cast<int>(q), cfg.nodes));  // the next CPUs
      tx_loop(rig, static_cast<uint16_t>(q), *tx[q], senders_done);
    });
  }
  auto senders = make_senders(threads);
  delivery.reset();
  const auto w = measure(cfg, threads, delivery, dpdk_send_loop(rig, queues, traffic, senders, cfg),
                         [&] { return dpdk_stats(rig, tx, senders); });
  senders_done.store(true, std::memory_order_release);  // release: pairs with tx_loop's acquire
  for (std::thread& t : tx_threads) t.join();

  const std::vector<TxQueueStats> end = dpdk_stats(rig, tx, senders);
  const bool drained = std::all_of(end.begin(), end.end(), [](const TxQueueStats& q) { return q.queued == 0; });
  Run r = summarize_run("-", drained, end, senders, w);
  delivery.check(r.sent, r);
  return r;
}

#endif

}  // namespace txpath::bench_detail
