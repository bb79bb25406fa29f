// SPDX-License-Identifier: MIT
// Ethernet addresses as text (see mac.hpp).
#include "net/mac.hpp"

#include <cstdio>

namespace txpath::net {

bool parse_mac(const std::string& text, MacAddress& mac) {
  unsigned v[6];
  char extra = 0;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5], &extra) != 6)
    return false;
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(v[i]);
  return true;
}

std::string mac_text(const MacAddress& mac) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

}  // namespace txpath::net
