// SPDX-License-Identifier: MIT
// `txpath exporter --listen HOST:PORT`: this user's live queues over HTTP, as Prometheus text or
// OpenMetrics (include/txpath/metrics.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace txpath::cli {

struct ExporterOptions {
  std::string listen = "127.0.0.1:9101";
};

void add_exporter_command(CLI::App& app, ExporterOptions& options);
// Exit: 0 stopped by SIGINT/SIGTERM; 2 a bad --listen (not HOST:PORT, port out of range, a host
// that does not resolve); 1 the address cannot be bound (in use, no permission) or the endpoint
// directory is not private.
int run_exporter_command(const ExporterOptions& options);

}  // namespace txpath::cli
