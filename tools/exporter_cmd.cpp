// SPDX-License-Identifier: MIT
// `txpath exporter`: parses, starts txpath::metrics::HttpServer over this user's live endpoints.
#include "exporter_cmd.hpp"

#include <fmt/core.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "exporter/http_server.hpp"
#include "txpath/error.hpp"
#include "txpath/metrics.hpp"

namespace txpath::cli {

namespace {

metrics::HttpServer* g_server = nullptr;  // for the signal handler: stop() is async-signal-safe

extern "C" void stop_exporter(int) {
  if (g_server) g_server->stop();
}

}  // namespace

void add_exporter_command(CLI::App& app, ExporterOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "exporter", "serve this user's live queues as Prometheus metrics (GET /metrics; OpenMetrics if Accept asks) "
      "until SIGINT/SIGTERM");
  cmd->add_option("--listen", options.listen, "HOST:PORT to listen on ([IPV6]:PORT; port 0: any)")
      ->capture_default_str();
}

int run_exporter_command(const ExporterOptions& options) {
  try {
    const metrics::ListenAddress where = metrics::parse_listen(options.listen);
    metrics::live_metrics_text();  // an endpoint directory that is not private: exit 1 now
    metrics::HttpServer server(where, [](metrics::Format f) { return metrics::live_metrics_text(f); });
    g_server = &server;
    struct sigaction sa{};
    sa.sa_handler = stop_exporter;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    fmt::print("txpath exporter: listening on {}\n", server.bound());
    std::fflush(stdout);
    server.run();
    g_server = nullptr;
    return 0;
  } catch (const metrics::BadListen& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "txpath: error: exporter: {}\n", e.what());
    return 1;
  }
}

}  // namespace txpath::cli
