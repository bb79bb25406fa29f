// SPDX-License-Identifier: MIT
// Ethernet addresses as text: "aa:bb:cc:dd:ee:ff" (lower-case hex, colons), the form the
// testbed records and `ip link` print. For src/net, the bench (peer:testpmd's --eth-peer) and
// the tests. Not a hot path.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace txpath::net {

using MacAddress = std::array<uint8_t, 6>;

// Six colon-separated groups of one or two hex digits and nothing after them; false otherwise
// (mac is then unspecified).
bool parse_mac(const std::string& text, MacAddress& mac);

// The address as "aa:bb:cc:dd:ee:ff".
std::string mac_text(const MacAddress& mac);

}  // namespace txpath::net
