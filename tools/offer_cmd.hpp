// SPDX-License-Identifier: MIT
// `txpath offer`: a schedule of flows through the kernel's path or txpath's (bench/offer.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace txpath::cli {

struct OfferOptions {
  std::string device;
  std::string via = "txpath";
  std::string strategy = "busylock";
  std::string tc_config, tc_dev;
  std::vector<std::string> flows;
  std::string duration = "2";
  std::string json;
};

void add_offer_command(CLI::App& app, OfferOptions& options);
int run_offer_command(const OfferOptions& options);

}  // namespace txpath::cli
