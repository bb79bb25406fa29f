// SPDX-License-Identifier: MIT
// libFuzzer target: the pcap / pcapng reader (libpcap) of `txpath bench --source pcap:FILE`
// (src/bench/pcap_source.hpp). The input is the whole file. parse_pcap() must either refuse it
// with one ConfigError line or return a capture that keeps the reader's promises: at least one
// frame, each inside the loaded bytes, 14..max bytes long, time stamps never going back, the
// loaded bytes within the replay's cap.
// Run: scripts/test-all.sh fuzz, or ./build-fuzz/fuzz_pcap_reader fuzz/corpus/pcap_reader
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "bench/pcap_source.hpp"
#include "txpath/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  constexpr std::size_t kMaxFrame = 1514;
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  txpath::bench_detail::Capture cap;
  try {
    cap = txpath::bench_detail::parse_pcap(file, kMaxFrame, "fuzz.pcap");
  } catch (const txpath::ConfigError& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) std::abort();
    return 0;
  }
  if (cap.frames.empty() || cap.bytes.size() > txpath::bench_detail::kMaxReplayBytes) std::abort();
  uint64_t prev = 0;
  for (const auto& f : cap.frames) {
    if (f.len < 14 || f.len > kMaxFrame || f.offset + f.len > cap.bytes.size()) std::abort();
    if (f.time_ns < prev) std::abort();
    prev = f.time_ns;
  }
  if (cap.span_ns != prev) std::abort();
  return 0;
}
