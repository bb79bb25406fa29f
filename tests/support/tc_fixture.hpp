// SPDX-License-Identifier: MIT
// A test fixture for `txpath tc` through tc::run(): each test gets its own temporary directory
// (removed afterwards) holding the tc file path_; tc("qdisc add ...") runs
// `txpath tc --config PATH WORDS...` with the line split as -batch splits it, leaving what it
// wrote in out_ and err_.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tc/internal.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc::test {

class TcFileFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("txpath-" + std::string(info->test_suite_name()) + "-" + std::to_string(::getpid()) +
            "-" + info->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "txpath.tc").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The exit status of `txpath tc --config path_` with the words of line.
  int tc(const std::string& line) {
    std::vector<std::string> args = {"--config", path_};
    for (auto& w : batch_words(line)) args.push_back(w);
    out_.str("");
    err_.str("");
    return run(args, out_, err_);
  }
  // The tc file's text now.
  std::string file() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
  std::string path_;
  std::ostringstream out_, err_;
};

}  // namespace txpath::tc::test
