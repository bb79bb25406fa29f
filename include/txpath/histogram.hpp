// SPDX-License-Identifier: MIT
// A latency histogram with log-linear buckets, in the manner of HdrHistogram: fixed memory,
// O(1) record, mergeable, percentiles within a known relative error.
//
// Buckets. Values below kSubBuckets (32) have a bucket each (exact). Above, each power-of-two
// range [2^k, 2^(k+1)) is split into kSubBuckets linear sub-buckets of width 2^(k-5), so a
// bucket is never wider than 1/32 of the values in it. Ranges go up to 2^kMaxExponent ns (about
// 18 minutes); larger values land in the last bucket (and still set max()). That is kBuckets
// (1152) counters, 9 KiB, whatever is recorded.
//
// Percentiles. percentile(q) finds the bucket holding the value of rank ceil(q * count) and
// answers that bucket's midpoint (clamped to [min(), max()]; the top rank answers max() itself):
// within half a bucket of the true value, a relative error of at most 1/64 (1.6%) for values
// >= 32 and none below.
//
// Not thread-safe: one writer, or writers that take turns under a lock (a device's tx lock);
// readers read once the writers are done (a join, or the lock).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace txpath {

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBucketBits = 5;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // 32
  static constexpr unsigned kMaxExponent = 40;  // ranges up to 2^40 ns
  static constexpr std::size_t kBuckets = kSubBuckets + (kMaxExponent - kSubBucketBits) * kSubBuckets;

  // The bucket a value falls in.
  static constexpr std::size_t bucket_of(uint64_t v) noexcept {
    if (v < kSubBuckets) return static_cast<std::size_t>(v);
    const unsigned k = static_cast<unsigned>(std::bit_width(v)) - 1;  // 2^k <= v < 2^(k+1)
    if (k >= kMaxExponent) return kBuckets - 1;
    const uint64_t sub = (v >> (k - kSubBucketBits)) & (kSubBuckets - 1);
    return static_cast<std::size_t>(kSubBuckets + (k - kSubBucketBits) * kSubBuckets + sub);
  }
  // The smallest and the largest value of bucket i (inclusive; the last bucket's high is its
  // nominal end, though larger values are counted there too).
  static constexpr uint64_t bucket_low(std::size_t i) noexcept {
    if (i < kSubBuckets) return i;
    const uint64_t range = (i - kSubBuckets) / kSubBuckets;  // k - kSubBucketBits
    const uint64_t sub = (i - kSubBuckets) % kSubBuckets;
    return (kSubBuckets + sub) << range;
  }
  static constexpr uint64_t bucket_high(std::size_t i) noexcept {
    if (i < kSubBuckets) return i;
    const uint64_t range = (i - kSubBuckets) / kSubBuckets;
    return bucket_low(i) + (uint64_t{1} << range) - 1;
  }

  void record(uint64_t v) noexcept {
    ++counts_[bucket_of(v)];
    if (count_ == 0 || v < min_) min_ = v;
    if (v > max_) max_ = v;
    ++count_;
  }
  void merge(const LatencyHistogram& other) noexcept {
    if (other.count_ == 0) return;
    for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    count_ += other.count_;
  }
  void clear() noexcept { *this = LatencyHistogram{}; }
  // Adds `n` values to bucket i whose smallest and largest values, among all added so far, are
  // `lo` and `hi` (for a histogram read back from its buckets: see run_bench's worker text).
  // False, and nothing added, when i is not a bucket, n is 0, lo > hi, lo or hi is outside
  // bucket i, or the count would overflow.
  bool add_bucket(std::size_t i, uint64_t n, uint64_t lo, uint64_t hi) noexcept {
    if (i >= kBuckets || n == 0 || lo > hi || count_ + n < count_) return false;
    if (bucket_of(lo) != i || bucket_of(hi) != i) return false;
    counts_[i] += n;
    min_ = count_ == 0 ? lo : std::min(min_, lo);
    max_ = std::max(max_, hi);
    count_ += n;
    return true;
  }

  uint64_t count() const noexcept { return count_; }
  uint64_t min() const noexcept { return min_; }  // 0 when empty
  uint64_t max() const noexcept { return max_; }
  std::span<const uint64_t, kBuckets> counts() const noexcept { return counts_; }

  // The value at quantile q (0..1; 0.5 the median, 0.999 the 99.9th percentile): see above.
  // 0 when empty.
  double percentile(double q) const noexcept {
    if (count_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
    if (rank >= count_) return static_cast<double>(max_);  // the largest value is kept exactly
    uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen < rank) continue;
      const double mid = (static_cast<double>(bucket_low(i)) + static_cast<double>(bucket_high(i))) / 2;
      return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
    }
    return static_cast<double>(max_);
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
};

}  // namespace txpath
