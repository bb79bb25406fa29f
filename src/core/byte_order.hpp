// SPDX-License-Identifier: MIT
// Big-endian (network order) loads and stores on raw frame bytes, for the frame writer and
// parser (frame.cpp) and the flow hash (queue_select.cpp). No alignment assumed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace txpath::byte_order {

inline uint8_t u8(const std::byte* p) noexcept { return std::to_integer<uint8_t>(*p); }
inline uint16_t load16(const std::byte* p) noexcept {
  return static_cast<uint16_t>((u8(p) << 8) | u8(p + 1));
}
inline uint32_t load32(const std::byte* p) noexcept {
  return (uint32_t{load16(p)} << 16) | load16(p + 2);
}
inline uint64_t load64(const std::byte* p) noexcept {
  return (uint64_t{load32(p)} << 32) | load32(p + 4);
}
inline void store8(std::byte* p, uint8_t v) noexcept { *p = std::byte{v}; }
inline void store16(std::byte* p, uint16_t v) noexcept {
  store8(p, static_cast<uint8_t>(v >> 8));
  store8(p + 1, static_cast<uint8_t>(v));
}
inline void store32(std::byte* p, uint32_t v) noexcept {
  store16(p, static_cast<uint16_t>(v >> 16));
  store16(p + 2, static_cast<uint16_t>(v));
}
inline void store64(std::byte* p, uint64_t v) noexcept {
  store32(p, static_cast<uint32_t>(v >> 32));
  store32(p + 4, static_cast<uint32_t>(v));
}

}  // namespace txpath::byte_order
