// SPDX-License-Identifier: MIT
// A UDP socket bound to the loopback on a port of the kernel's choice, with a large receive
// buffer and a 2 s receive timeout: the receiving end of the udp device tests (no privilege).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include "device/netif.hpp"

namespace txpath::test {

struct UdpReceiver {
  netif::Fd fd{::socket(AF_INET, SOCK_DGRAM, 0)};
  uint16_t port = 0;

  UdpReceiver() {
    EXPECT_TRUE(fd);
    const int big = 8 << 20;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
    timeval tv{2, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
};

}  // namespace txpath::test
