// SPDX-License-Identifier: MIT
// The `txpath` command line: parses, calls the library, prints. Nothing else lives here.
//
// Exit codes:
//   0    ok
//   1    a check failed (conservation, delivery), or an output (--json, --csv, --plot, a
//        pcap:FILE capture) could not be written; bench prints its table first. Also: a bench
//        worker process (each round runs in one) was killed or sent malformed output (one line
//        naming the round; nothing printed); a worker's own error exits with its status
//   2    bad usage or configuration (unknown command or option, a bad value, a file that cannot
//        be used): nothing was run
//   130  bench stopped by SIGINT, 143 by SIGTERM (128 + the signal): the table of the rows that
//        ran is printed and the outputs are written marked partial; a second signal exits at
//        once with the same status
// `txpath exporter` exits 0 when stopped by SIGINT/SIGTERM, 2 for a bad --listen (not HOST:PORT,
// a port out of range, a host that does not resolve), 1 if it cannot listen there.
// `txpath tc` exits as tc does: 1 parse error, 2 rejected configuration, 255 bad arguments.
// `txpath` alone prints the usage on stderr and exits 2.
// Every error is one line on stderr, "txpath: error: ...", with user text escaped and cut
// (core/text.hpp; one_line() for messages that did not).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_cmd.hpp"
#include "offer_cmd.hpp"
#include "core/text.hpp"
#include "exporter_cmd.hpp"
#include "net_cmds.hpp"
#include "txpath/tc.hpp"
#include "txpath/version.hpp"

namespace {

// `txpath --version`: "txpath VERSION" (as `txpath bench --json` records it), then how it was built.
std::string version_text() {
  const txpath::BuildInfo& b = txpath::build_info();
  return fmt::format("txpath {}\nbuilt by {} {}, build type {}{}", b.version, b.compiler_id,
                     b.compiler_version, b.build_type,
                     b.sanitize.empty() ? std::string() : fmt::format(", sanitizer {}", b.sanitize));
}

// The commands registered with `app`, in order: bench, tc, testbed, sink, exporter, offer.
std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(cmd->get_name());
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  // `txpath tc ...` takes tc's own grammar (-s, -batch FILE, ...), which CLI11 does not parse.
  if (argc > 1 && std::string_view(argv[1]) == "tc") {
    const std::vector<std::string> args(argv + 2, argv + argc);
    return txpath::tc::run(args, std::cout, std::cerr);
  }
  CLI::App app{"txpath: the Linux transmit path (qdisc + contention strategies) in userspace"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  txpath::cli::BenchOptions bench;
  bench.command_line.assign(argv, argv + argc);
  txpath::cli::add_bench_command(app, bench);
  // Listed for --help only: main() hands `txpath tc` to tc::run above.
  app.add_subcommand("tc", "tc's grammar over a txpath configuration file (txpath tc help)");
  txpath::cli::TestbedOptions testbed;
  txpath::cli::add_testbed_command(app, testbed);
  txpath::cli::SinkOptions sink;
  txpath::cli::add_sink_command(app, sink);
  txpath::cli::ExporterOptions exporter;
  txpath::cli::add_exporter_command(app, exporter);
  txpath::cli::OfferOptions offer;
  txpath::cli::add_offer_command(app, offer);
  // No command: the usage, on stderr (nothing was run: exit 2). A first argument that is not an
  // option must be a command (CLI11 would say "A subcommand is required", or nothing useful).
  if (argc < 2) {
    app.name(argv[0]);  // as parse() would name it
    fmt::print(stderr, "{}", app.help());
    return 2;
  }
  const std::vector<std::string> commands = command_names(app);
  if (const std::string_view cmd = argv[1];
      !cmd.starts_with('-') && std::find(commands.begin(), commands.end(), cmd) == commands.end()) {
    fmt::print(stderr, "txpath: error: unknown command {} (commands: {})\n", txpath::quoted(cmd),
               fmt::join(commands, ", "));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's messages may echo an argument raw (a newline, an ESC, 128 KiB): one safe line.
    fmt::print(stderr, "txpath: error: {}\n", txpath::cli::one_line(e.what()));
    return 2;
  }
  if (app.got_subcommand("bench")) {
    bench.args.assign(argv + 1, argv + argc);  // each round's worker runs the same command line
    return txpath::cli::run_bench_command(bench);
  }
  if (app.got_subcommand("testbed")) return txpath::cli::run_testbed_command(testbed);
  if (app.got_subcommand("sink")) {
    txpath::cli::prepare_sink_signals();
    return txpath::cli::run_sink_command(sink);
  }
  if (app.got_subcommand("exporter")) return txpath::cli::run_exporter_command(exporter);
  if (app.got_subcommand("offer")) return txpath::cli::run_offer_command(offer);
  return 2;
}
