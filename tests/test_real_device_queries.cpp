// SPDX-License-Identifier: MIT
// txpath/real_device.hpp: what code working beside a device learns of it through the public
// headers alone (the bench's kernel row, its sink, its pcap output) — the interface or peer it
// sends to, and a file output finished or abandoned. Needs no root: udp on the loopback, pcap in
// the test's temporary directory.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "txpath/device.hpp"
#include "txpath/real_device.hpp"

using namespace txpath;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string temp_path(const std::string& tag) {
  return ::testing::TempDir() + "txpath_realdev_" + std::to_string(::getpid()) + "_" + tag + ".pcap";
}

}  // namespace

TEST(RealDeviceQueries, ModelDevicesAnswerNothing) {
  for (const char* spec : {"null", "nic", "fault"}) {
    auto device = make_device(spec);
    EXPECT_EQ(link_interface(*device), "") << spec;
    EXPECT_FALSE(socket_peer(*device)) << spec;
    finish_output(*device);  // nothing to do, nothing thrown
    abandon_output(*device);
  }
}

TEST(RealDeviceQueries, UdpDeviceGivesItsConnectedPeer) {
  auto device = make_device("udp:127.0.0.1:9");
  EXPECT_EQ(link_interface(*device), "");
  const auto peer = socket_peer(*device);
  ASSERT_TRUE(peer);
  ASSERT_EQ(peer->len, sizeof(sockaddr_in));
  const auto* in = reinterpret_cast<const sockaddr_in*>(&peer->addr);
  EXPECT_EQ(in->sin_family, AF_INET);
  EXPECT_EQ(ntohs(in->sin_port), 9);
  EXPECT_EQ(ntohl(in->sin_addr.s_addr), 0x7f000001u);
}

TEST(RealDeviceQueries, PcapOutputIsMadeByFinishAndLeftOutByAbandon) {
  const std::string finished = temp_path("finished");
  const std::string abandoned = temp_path("abandoned");
  ::unlink(finished.c_str());
  ::unlink(abandoned.c_str());
  {
    auto device = make_device("pcap:" + finished);
    EXPECT_FALSE(socket_peer(*device));
    EXPECT_FALSE(exists(finished));  // a temporary file until finished
    finish_output(*device);
    EXPECT_TRUE(exists(finished));
  }
  {
    auto device = make_device("pcap:" + abandoned);
    abandon_output(*device);
  }  // the destructor would have made the file, had it not been abandoned
  EXPECT_FALSE(exists(abandoned));
  ::unlink(finished.c_str());
}
