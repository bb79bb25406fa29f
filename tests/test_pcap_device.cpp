// SPDX-License-Identifier: MIT
// `pcap:FILE`: frames sent through a TxQueue land in a nanosecond pcap file that a small reader
// here (and tcpdump, when installed) reads back frame for frame.
//
// What is checked: the global header fields, every record's lengths and timestamp, that every
// frame parses and is byte-identical to what FrameTemplate writes for its (sender, seq), that
// the file holds exactly the packets the queue counted as sent, each once, in per-sender order;
// the doorbell/buffer-full flushes; the write-error path (tx_errors, no throw); the one-line
// DeviceError for a file that cannot be created.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/pcap_source.hpp"
#include "device/pcap_device.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr uint64_t kPerSender = 1000;  // sanitizers slow everything 3-15x
#else
constexpr uint64_t kPerSender = 5000;
#endif
constexpr uint32_t kSenders = 4;
constexpr std::size_t kPayload = 64;

// A file name unique to this process and test (ctest runs test processes in parallel).
std::string temp_path(const std::string& tag) {
  return ::testing::TempDir() + "txpath_pcap_" + std::to_string(::getpid()) + "_" + tag + ".pcap";
}

struct PcapRecord {
  uint32_t ts_sec = 0, ts_nsec = 0, incl_len = 0, orig_len = 0;
  std::vector<std::byte> data;
};

struct PcapFile {
  uint32_t magic = 0;
  uint16_t version_major = 0, version_minor = 0;
  int32_t thiszone = -1;
  uint32_t sigfigs = ~0u, snaplen = 0, linktype = 0;
  std::vector<PcapRecord> records;
  std::string error;  // non-empty if the file is malformed
};

template <class T>
bool take(const std::vector<std::byte>& buf, std::size_t& off, T& out) {
  if (buf.size() - off < sizeof out) return false;
  std::memcpy(&out, buf.data() + off, sizeof out);  // host byte order, as the writer used
  off += sizeof out;
  return true;
}

// A minimal reader of the classic pcap format, host byte order only (we wrote the file).
PcapFile read_pcap(const std::string& path) {
  PcapFile f;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    f.error = "cannot open " + path;
    return f;
  }
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> buf(raw.size());
  std::memcpy(buf.data(), raw.data(), raw.size());
  std::size_t off = 0;
  if (!take(buf, off, f.magic) || !take(buf, off, f.version_major) ||
      !take(buf, off, f.version_minor) || !take(buf, off, f.thiszone) ||
      !take(buf, off, f.sigfigs) || !take(buf, off, f.snaplen) || !take(buf, off, f.linktype)) {
    f.error = "short global header";
    return f;
  }
  while (off < buf.size()) {
    PcapRecord r;
    if (!take(buf, off, r.ts_sec) || !take(buf, off, r.ts_nsec) || !take(buf, off, r.incl_len) ||
        !take(buf, off, r.orig_len)) {
      f.error = "short record header at offset " + std::to_string(off);
      return f;
    }
    if (buf.size() - off < r.incl_len) {
      f.error = "short record data at offset " + std::to_string(off);
      return f;
    }
    r.data.assign(buf.begin() + static_cast<std::ptrdiff_t>(off),
                  buf.begin() + static_cast<std::ptrdiff_t>(off + r.incl_len));
    off += r.incl_len;
    f.records.push_back(std::move(r));
  }
  return f;
}

void expect_global_header(const PcapFile& f) {
  EXPECT_EQ(f.magic, 0xa1b23c4du);
  EXPECT_EQ(f.version_major, 2u);
  EXPECT_EQ(f.version_minor, 4u);
  EXPECT_EQ(f.thiszone, 0);
  EXPECT_EQ(f.sigfigs, 0u);
  EXPECT_GE(f.snaplen, 1514u);
  EXPECT_EQ(f.linktype, 1u);
}

FrameTemplate make_template(std::size_t payload = kPayload) {
  FrameSpec spec;
  spec.payload = payload;
  return FrameTemplate(spec);
}

std::vector<std::byte> expected_frame(const FrameTemplate& tmpl, uint32_t sender, uint64_t seq) {
  std::vector<std::byte> out(tmpl.size());
  out.resize(tmpl.write(out, sender, seq));
  return out;
}

Packet* make_packet(Pool& pool, const FrameTemplate& tmpl, uint32_t sender, uint64_t seq) {
  Packet* p = pool.get();
  if (p) p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), sender, seq));
  return p;
}

XmitResult xmit_locked(Device& dev, Packet* p, bool more) {
  std::lock_guard lock(dev.tx_lock());
  return dev.xmit(p, more);
}

off_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// The size of the OutputFile temporary beside `path` (".NAME.XXXXXX"), -1 if there is none.
off_t temp_size(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = path.substr(0, slash);
  const std::string prefix = "." + path.substr(slash + 1) + ".";
  off_t size = -1;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::string_view(e->d_name).rfind(prefix, 0) == 0) size = file_size(dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  return size;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool tcpdump_installed(std::string& path) {
  for (const char* p : {"/usr/bin/tcpdump", "/usr/sbin/tcpdump"}) {
    if (::access(p, X_OK) == 0) {
      path = p;
      return true;
    }
  }
  return false;
}

// Runs `cmd` and returns its standard output split into lines.
std::vector<std::string> run_lines(const std::string& cmd) {
  std::vector<std::string> lines;
  std::unique_ptr<FILE, int (*)(FILE*)> f(::popen(cmd.c_str(), "r"), ::pclose);
  if (!f) return lines;
  std::string cur;
  for (int c; (c = std::fgetc(f.get())) != EOF;) {
    if (c == '\n') {
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(c));
    }
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

// Sends kSenders x per_sender frames through a TxQueue on `pcap:path`, drains, and returns the
// queue's final statistics (the queue and the device are gone, the file is closed).
TxQueueStats send_through_queue(const std::string& strategy, const std::string& path,
                                uint64_t per_sender) {
  // The pool outlives the device (a device frees what it still holds when destroyed).
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 32});
  auto dev = make_device("pcap:" + path);
  EXPECT_EQ(dev->kind(), "pcap");
  EXPECT_EQ(dev->describe(), "pcap:" + path);
  TxQueueConfig cfg;
  cfg.strategy = strategy;
  cfg.qdisc = "pfifo limit 1000000";  // no drops expected; handled below if any
  auto txq = TxQueue::create(*dev, cfg);

  std::atomic<bool> go{false};
  std::atomic<uint64_t> refused{0};
  std::vector<std::thread> senders;
  for (uint32_t t = 0; t < kSenders; ++t) {
    senders.emplace_back([&, t] {
      Pool::Cache cache(pool);
      const FrameTemplate tmpl = make_template();
      // acquire: pairs with the release store below; all senders start together.
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (uint64_t seq = 0; seq < per_sender; ++seq) {
        Packet* p = cache.get();
        while (!p) {  // pool momentarily empty: buffers are in flight; wait for completions
          std::this_thread::yield();
          p = cache.get();
        }
        p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), t, seq));
        if (txq->send(p) == SendStatus::too_big) {
          // relaxed: a test counter, read after join().
          refused.fetch_add(1, std::memory_order_relaxed);
          cache.put(p);
        }
      }
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& s : senders) s.join();
  EXPECT_TRUE(txq->drain(30s)) << "packets stranded: " << txq->stats().queued;
  const TxQueueStats s = txq->stats();
  EXPECT_EQ(refused.load(std::memory_order_relaxed), 0u);  // relaxed: after join()
  txq.reset();
  dev.reset();  // flushes (nothing should be pending) and closes the file
  return s;
}

// Checks the file against what the queue says it sent.
void check_capture(const std::string& path, const TxQueueStats& s, uint64_t per_sender) {
  const uint64_t submitted = per_sender * kSenders;
  EXPECT_EQ(s.submitted, submitted);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(s.device.tx_packets, s.sent);
  EXPECT_EQ(s.device.completed, s.sent);
  EXPECT_EQ(s.device.tx_errors, 0u);
  EXPECT_GE(s.device.doorbells, 1u);
  EXPECT_LE(s.device.doorbells, s.sent);

  const PcapFile f = read_pcap(path);
  ASSERT_TRUE(f.error.empty()) << f.error;
  expect_global_header(f);
  ASSERT_EQ(f.records.size(), s.sent);

  const FrameTemplate tmpl = make_template();
  std::vector<int64_t> last_seq(kSenders, -1);
  std::vector<uint64_t> count(kSenders, 0);
  uint64_t prev_ts = 0, bad = 0, order = 0, mismatch = 0;
  for (const PcapRecord& r : f.records) {
    EXPECT_LT(r.ts_nsec, 1'000'000'000u);
    const uint64_t ts = uint64_t{r.ts_sec} * 1'000'000'000ull + r.ts_nsec;
    EXPECT_GE(ts, prev_ts) << "timestamps went back";
    prev_ts = ts;
    EXPECT_EQ(r.incl_len, r.orig_len);
    EXPECT_EQ(r.incl_len, tmpl.size());
    const auto info = parse_frame(r.data);
    if (!info || info->sender >= kSenders) {
      ++bad;
      continue;
    }
    // Strictly increasing per sender: in order, and no duplicate.
    if (static_cast<int64_t>(info->seq) <= last_seq[info->sender]) ++order;
    last_seq[info->sender] = static_cast<int64_t>(info->seq);
    ++count[info->sender];
    if (r.data != expected_frame(tmpl, info->sender, info->seq)) ++mismatch;
  }
  EXPECT_EQ(bad, 0u) << "records that do not parse as txpath frames";
  EXPECT_EQ(order, 0u) << "records out of per-sender order or duplicated";
  EXPECT_EQ(mismatch, 0u) << "records whose bytes differ from the frame sent";
  if (s.dropped == 0) {
    for (uint32_t t = 0; t < kSenders; ++t) {
      EXPECT_EQ(count[t], per_sender) << "sender " << t;
      EXPECT_EQ(last_seq[t], static_cast<int64_t>(per_sender) - 1) << "sender " << t;
    }
  }
  // Sanity: the timestamps are wall-clock time of this run, not zero.
  EXPECT_GT(prev_ts, 1'600'000'000ull * 1'000'000'000ull);
}

class PcapThroughQueue : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(PcapThroughQueue, FileHoldsEverySentFrameInOrder) {
  const std::string path = temp_path("queue_" + GetParam());
  const TxQueueStats s = send_through_queue(GetParam(), path, kPerSender);
  check_capture(path, s, kPerSender);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Strategies, PcapThroughQueue,
                         ::testing::Values("busylock", "nolock", "drainer"),
                         [](const auto& info) { return info.param; });

TEST(PcapDevice, DoorbellWritesAndCompletes) {
  const std::string path = temp_path("doorbell");
  Pool pool(PoolConfig{.packets = 16, .buffer_size = 2048, .cache_size = 4});
  const FrameTemplate tmpl = make_template();
  {
    PcapDevice dev(PcapConfig{.path = path});
    EXPECT_EQ(dev.kind(), "pcap");
    EXPECT_EQ(dev.describe(), "pcap:" + path);
    EXPECT_EQ(dev.mtu(), 1500u);
    EXPECT_EQ(dev.dql(), nullptr);
    // Nothing is FILE until the capture is complete; the header is in the temporary file.
    EXPECT_EQ(file_size(path), -1);
    EXPECT_EQ(temp_size(path), static_cast<off_t>(PcapDevice::kGlobalHeaderLen));
    for (uint64_t i = 0; i < 4; ++i) {
      ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, i), true), XmitResult::ok);
    }
    // xmit_more: nothing written, nothing completed yet.
    EXPECT_EQ(temp_size(path), static_cast<off_t>(PcapDevice::kGlobalHeaderLen));
    EXPECT_EQ(dev.in_flight(), 4u);
    EXPECT_EQ(pool.free_count(), pool.capacity() - 4);
    ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, 4), false), XmitResult::ok);
    EXPECT_EQ(temp_size(path),
              static_cast<off_t>(PcapDevice::kGlobalHeaderLen +
                                 5 * (PcapDevice::kRecordHeaderLen + tmpl.size())));
    EXPECT_EQ(dev.in_flight(), 0u);
    EXPECT_EQ(pool.free_count(), pool.capacity());
    const auto s = dev.stats();
    EXPECT_EQ(s.tx_packets, 5u);
    EXPECT_EQ(s.tx_bytes, 5 * tmpl.size());
    EXPECT_EQ(s.doorbells, 1u);
    EXPECT_EQ(s.completed, 5u);
    EXPECT_EQ(s.tx_errors, 0u);
    EXPECT_EQ(s.busy, 0u);
    EXPECT_EQ(s.stops, 0u);
    EXPECT_EQ(dev.write_error(), "");
    // Left pending at destruction: the destructor writes them.
    ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, 5), true), XmitResult::ok);
  }
  EXPECT_EQ(pool.free_count(), pool.capacity());
  const PcapFile f = read_pcap(path);
  ASSERT_TRUE(f.error.empty()) << f.error;
  expect_global_header(f);
  ASSERT_EQ(f.records.size(), 6u);
  for (uint64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(f.records[i].data, expected_frame(tmpl, 0, i)) << "record " << i;
  }
  std::remove(path.c_str());
}

TEST(PcapDevice, FullBufferFlushesBeforeTheDoorbell) {
  const std::string path = temp_path("fullbuf");
  // Frames of the full 1514 bytes: the 256 KiB buffer holds fewer than 200 of them.
  const FrameTemplate tmpl = make_template(1500 - 28);
  ASSERT_EQ(tmpl.size(), 1514u);
  const uint64_t n = 2 * PcapDevice::kBufferBytes / (PcapDevice::kRecordHeaderLen + 1514) + 5;
  Pool pool(PoolConfig{.packets = n, .buffer_size = 2048, .cache_size = 4});
  {
    PcapDevice dev(PcapConfig{.path = path});
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 1, i), true), XmitResult::ok);
    }
    // No doorbell was asked for, but the buffer could not hold the batch: it was written out
    // (and those packets completed), at least twice.
    EXPECT_GE(dev.stats().doorbells, 2u);
    EXPECT_GT(temp_size(path), static_cast<off_t>(PcapDevice::kBufferBytes));
    EXPECT_LT(dev.in_flight(), n);
    EXPECT_EQ(pool.free_count(), pool.capacity() - dev.in_flight());
  }
  const PcapFile f = read_pcap(path);
  ASSERT_TRUE(f.error.empty()) << f.error;
  ASSERT_EQ(f.records.size(), n);
  for (uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(f.records[i].incl_len, 1514u);
    EXPECT_EQ(f.records[i].data, expected_frame(tmpl, 1, i)) << "record " << i;
  }
  std::remove(path.c_str());
}

TEST(PcapDevice, WriteErrorCountsTxErrorsAndNeverThrows) {
  // A FIFO whose reader goes away: write(2) then fails with EPIPE (SIGPIPE ignored meanwhile).
  const std::string path = temp_path("fifo");
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old), 0);

  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  Pool pool(PoolConfig{.packets = 8, .buffer_size = 2048, .cache_size = 2});
  const FrameTemplate tmpl = make_template();
  {
    PcapDevice dev(PcapConfig{.path = path});
    uint32_t magic = 0;
    ASSERT_EQ(::read(reader, &magic, sizeof magic), static_cast<ssize_t>(sizeof magic));
    EXPECT_EQ(magic, PcapDevice::kMagicNs);
    ::close(reader);

    ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, 0), true), XmitResult::ok);
    ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, 1), false), XmitResult::ok);
    auto s = dev.stats();
    EXPECT_EQ(s.tx_packets, 2u);
    EXPECT_EQ(s.completed, 2u);
    EXPECT_EQ(s.tx_errors, 2u);
    EXPECT_EQ(dev.write_error(), "device 'pcap:" + path + "': write: Broken pipe");
    EXPECT_EQ(pool.free_count(), pool.capacity());
    // After a failed write nothing more is written; later batches are errors too.
    ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, 2), false), XmitResult::ok);
    s = dev.stats();
    EXPECT_EQ(s.tx_errors, 3u);
    EXPECT_EQ(s.completed, 3u);
    EXPECT_EQ(s.doorbells, 2u);
  }
  EXPECT_EQ(pool.free_count(), pool.capacity());
  ::sigaction(SIGPIPE, &old, nullptr);
  std::remove(path.c_str());
}

TEST(PcapDevice, MissingDirectoryIsOneLineDeviceError) {
  const std::string spec = "pcap:/nonexistent-txpath-dir-" + std::to_string(::getpid()) + "/x.pcap";
  try {
    make_device(spec);
    FAIL() << "no DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, "device '" + spec + "': create a temporary file beside it: No such file or directory");
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TEST(PcapDevice, UnwritableFileIsDeviceError) {
  // /dev/full accepts open() but refuses the global header.
  try {
    make_device("pcap:/dev/full");
    FAIL() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "device 'pcap:/dev/full': write: No space left on device");
  }
}

TEST(PcapDevice, EmptyPathIsConfigError) {
  try {
    make_device("pcap:");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("device 'pcap:': ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_THROW(make_device("pcap"), ConfigError);
}

TEST(PcapDevice, PathMayHoldCommasAndColons) {
  const std::string path = temp_path("a,b=c:d");
  {
    auto dev = make_device("pcap:" + path);
    EXPECT_EQ(dev->describe(), "pcap:" + path);
    // The spec round-trips through describe().
    auto again = make_device(dev->describe());
    EXPECT_EQ(again->describe(), dev->describe());
  }
  EXPECT_EQ(file_size(path), static_cast<off_t>(PcapDevice::kGlobalHeaderLen));
  std::remove(path.c_str());
}

TEST(PcapDevice, TcpdumpReadsTheCapture) {
  std::string tcpdump;
  if (!tcpdump_installed(tcpdump)) GTEST_SKIP() << "tcpdump is not installed";
  const std::string path = temp_path("tcpdump");
  constexpr uint64_t kPer = 100;
  const TxQueueStats s = send_through_queue("busylock", path, kPer);
  ASSERT_EQ(s.sent, kPer * kSenders);
  // stdout: one line per packet; stderr ("reading from file ...") is not counted.
  const auto lines = run_lines(tcpdump + " -nn -r '" + path + "' 2>/dev/null");
  EXPECT_EQ(lines.size(), s.sent);
  uint64_t udp = 0;
  for (const auto& l : lines) {
    if (l.find("IP 10.0.0.1.9000 > 10.0.0.2.9000: UDP, length " + std::to_string(kPayload)) !=
        std::string::npos) {
      ++udp;
    }
  }
  EXPECT_EQ(udp, s.sent) << (lines.empty() ? std::string("no output") : lines.front());
  // And it reports no error reading the file (a truncated file makes it complain on stderr).
  const auto err = run_lines(tcpdump + " -nn -r '" + path + "' 2>&1 >/dev/null");
  for (const auto& l : err) EXPECT_EQ(l.rfind("reading from file", 0), 0u) << l;
  std::remove(path.c_str());
}

namespace {

// Process-wide limit on the size of a file written (RLIMIT_FSIZE), with SIGXFSZ ignored: a write
// past it fails with EFBIG, as on a full disk. Restored on scope exit.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ignore, &old_action_);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::sigaction(SIGXFSZ, &old_action_, nullptr);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool ok() const noexcept { return ok_; }

 private:
  rlimit old_{};
  struct sigaction old_action_ {};
  bool ok_ = false;
};

constexpr std::string_view kOldCapture = "an older capture, which a failed run must not touch\n";

void write_file(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

// A fresh path in the temporary directory holding kOldCapture.
std::string old_capture(const std::string& tag) {
  const std::string path = temp_path(tag);
  write_file(path, kOldCapture);
  return path;
}

// The capture at path is still kOldCapture byte for byte, and no temporary file is left beside it.
void expect_old_capture_untouched(const std::string& path) {
  EXPECT_EQ(read_all(path), kOldCapture);
  EXPECT_EQ(temp_size(path), -1) << "a temporary file was left behind";
}

// Sends `n` full-size frames through `dev`, one doorbell each.
void send_frames(Device& dev, Pool& pool, uint64_t n) {
  const FrameTemplate tmpl = make_template(1500 - 28);
  for (uint64_t i = 0; i < n; ++i)
    ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 0, i), false), XmitResult::ok);
}

}  // namespace

// A write that fails mid-capture (EFBIG here; ENOSPC on a full disk) never leaves a cut or
// empty FILE: the older capture stays byte for byte, and no temporary file is left beside it.
TEST(PcapDevice, FailedWriteLeavesTheOldFileIntact) {
  const std::string path = old_capture("fsize");
  Pool pool(PoolConfig{.packets = 8, .buffer_size = 2048, .cache_size = 2});
  {
    const FileSizeLimit limit(16 * 1024);
    ASSERT_TRUE(limit.ok());
    auto dev = make_device("pcap:" + path);
    send_frames(*dev, pool, 64);  // ~100 KB: past the limit
    EXPECT_GT(dev->stats().tx_errors, 0u);
  }  // destroyed without finish(): the failure cannot be reported, but FILE is untouched
  expect_old_capture_untouched(path);
  std::remove(path.c_str());
}

// finish() reports the failure: one line naming the file and the cause.
TEST(PcapDevice, FinishReportsAFailedWrite) {
  const std::string path = old_capture("finish_fail");
  Pool pool(PoolConfig{.packets = 8, .buffer_size = 2048, .cache_size = 2});
  {
    const FileSizeLimit limit(16 * 1024);
    ASSERT_TRUE(limit.ok());
    PcapDevice dev(PcapConfig{.path = path});
    send_frames(dev, pool, 64);
    try {
      dev.finish();
      FAIL() << "finish() did not report the failed write";
    } catch (const FileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what, "device 'pcap:" + path + "': write: File too large");
    }
    EXPECT_NO_THROW(dev.finish()) << "a second finish() does nothing";
  }
  expect_old_capture_untouched(path);
  std::remove(path.c_str());
}

// finish() commits: FILE appears whole, and only then.
TEST(PcapDevice, FinishCommitsTheCapture) {
  const std::string path = old_capture("finish_ok");
  Pool pool(PoolConfig{.packets = 8, .buffer_size = 2048, .cache_size = 2});
  PcapDevice dev(PcapConfig{.path = path});
  send_frames(dev, pool, 3);
  EXPECT_EQ(read_all(path), kOldCapture) << "FILE replaced before the capture was complete";
  dev.finish();
  const PcapFile f = read_pcap(path);
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_EQ(f.records.size(), 3u);
  EXPECT_EQ(temp_size(path), -1);
  std::remove(path.c_str());
}

// A device made only to check the spec leaves FILE alone.
TEST(PcapDevice, AbandonLeavesTheTargetAlone) {
  const std::string path = old_capture("abandon");
  {
    PcapDevice dev(PcapConfig{.path = path});
    dev.abandon();
  }
  expect_old_capture_untouched(path);
  std::remove(path.c_str());
}

// A symlink planted by another user in a sticky world-writable directory (/tmp) is not followed:
// root's capture would otherwise overwrite whatever the link names (fs.protected_symlinks).
TEST(PcapDevice, ForeignSymlinkIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a symlink owned by another user)";
  const std::string dir = ::testing::TempDir() + "txpath_pcap_sticky_" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0) << std::strerror(errno);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  const std::string target = old_capture("root_only");
  ::chmod(target.c_str(), 0600);
  const std::string link = dir + "/capture.pcap";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0) << std::strerror(errno);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0) << std::strerror(errno);
  try {
    make_device("pcap:" + link);
    ADD_FAILURE() << "the capture followed a foreign symlink";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("symlink owned by another user"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_all(target), kOldCapture);
  ::unlink(link.c_str());
  ::rmdir(dir.c_str());
  std::remove(target.c_str());
}

// What the device writes, the bench's capture reader (libpcap, pcap_next_ex) reads back whole:
// every frame byte-identical, in order, time stamps never going back.
TEST(PcapDevice, TheCaptureReaderReadsWhatTheDeviceWrote) {
  const std::string path = temp_path("roundtrip");
  Pool pool(PoolConfig{.packets = 16, .buffer_size = 2048, .cache_size = 4});
  const FrameTemplate tmpl = make_template();
  {
    PcapDevice dev(PcapConfig{.path = path});
    for (uint64_t i = 0; i < 10; ++i) {
      ASSERT_EQ(xmit_locked(dev, make_packet(pool, tmpl, 2, i), i % 3 != 2), XmitResult::ok);
    }
    dev.finish();
  }
  const bench_detail::Capture cap = bench_detail::load_pcap(path, 1514);
  ASSERT_EQ(cap.frames.size(), 10u);
  for (std::size_t i = 0; i < cap.frames.size(); ++i) {
    const auto got = cap.frame(i);
    const auto want = expected_frame(tmpl, 2, i);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << "frame " << i;
    if (i > 0) EXPECT_GE(cap.frames[i].time_ns, cap.frames[i - 1].time_ns);
  }
  std::remove(path.c_str());
}
