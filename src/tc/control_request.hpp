// SPDX-License-Identifier: MIT
// The bound on a control request (control_socket.hpp's protocol) before it is parsed: a request
// is one small JSON object, {"dev": "...", "config": "..."}, so its size and its shape are checked
// first, in one pass that builds nothing. Parsing a 16 MiB request of nested '[' into a JSON
// document took a worker from 7.5 MB to 1.26 GB and 6 s of CPU; bounded here, a request costs at
// most about its own size again. Private to src/tc/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txpath::tc {

// The largest request: the wire's limit (kMaxDocument, stats_socket.hpp), which holds the lines of
// about 200k htb classes of one device.
inline constexpr uint64_t kMaxControlRequestBytes = uint64_t{16} << 20;
// Arrays and objects inside one another (the request itself is depth 1), and the values of all
// kinds in the request (the request has 3): far above what the protocol needs, far below what
// could cost memory.
inline constexpr std::size_t kMaxControlRequestDepth = 8;
inline constexpr std::size_t kMaxControlRequestValues = 1024;

// Why `request` is refused before it is parsed, as one line; "" if it is within the bounds (or is
// not JSON at all: the parser then says so).
std::string control_request_refusal(std::string_view request);

}  // namespace txpath::tc
