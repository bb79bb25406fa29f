// SPDX-License-Identifier: MIT
// Reading a tc configuration file of N htb classes (the benchmark argument: 1,000, 10,000,
// 100,000), as every `txpath tc` command and `txpath bench --tc-config` does. The file is the
// canonical form `txpath tc` writes: per device an htb root, one parent class 1:1 and leaves
// under it, at most 50,000 classes per device (class minors are 16 bits). Items = classes.
//
//   BM_TcParse/N    Config::parse of the text: every line run, then each device's tree built
//                   once (the check that the configuration builds)
//   BM_TcLoad/N     Config::load of the file: open, fstat checks, read, parse
//   BM_TcCommand/N  what `txpath tc class add ...` does besides locking and renaming: parse,
//                   one class add (which builds the device's tree again), serialize
//   BM_TcBuild/N    Config::build of one device of N classes (at most 50,000): the qdisc objects
//   BM_TcBatch/N    `txpath tc -batch` of N class adds on a file with the htb root and its parent
//                   class (tc::run(): read, lock, parse, the batch, write): linear, it was quadratic
//   BM_TcLiveDocument/N  a running tree's live document of N classes (at most 50,000): written
//                   (collect_counters, stats_document) and read as `tc -s class show` reads it
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "txpath/tc.hpp"

namespace {

using txpath::tc::Config;

constexpr int kPerDevice = 50'000;

std::string htb_config(int classes) {
  std::string s;
  const int devices = (classes + kPerDevice - 1) / kPerDevice;
  char line[128];
  for (int d = 0; d < devices; ++d) {
    std::snprintf(line, sizeof line, "link add dev d%d\n", d);
    s += line;
  }
  for (int d = 0, left = classes; d < devices; ++d, left -= kPerDevice) {
    const int here = std::min(left, kPerDevice);
    std::snprintf(line, sizeof line,
                  "qdisc add dev d%d root handle 1: htb default 2\n"
                  "class add dev d%d parent 1: classid 1:1 htb rate 10gbit\n", d, d);
    s += line;
    for (int i = 2; i <= here; ++i) {
      std::snprintf(line, sizeof line,
                    "class add dev d%d parent 1:1 classid 1:%x htb rate 1mbit ceil 10gbit\n", d, i);
      s += line;
    }
  }
  return s;
}

void BM_TcParse(benchmark::State& state) {
  const std::string text = htb_config(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Config cfg = Config::parse(text, "bench.tc");
    benchmark::DoNotOptimize(std::as_const(cfg));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["bytes"] = static_cast<double>(text.size());
}

void BM_TcLoad(benchmark::State& state) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("txpath-bench-tc-" + std::to_string(::getpid()) + ".tc")).string();
  std::ofstream(path) << htb_config(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Config cfg = Config::load(path);
    benchmark::DoNotOptimize(std::as_const(cfg));
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_TcCommand(benchmark::State& state) {
  const std::string text = htb_config(static_cast<int>(state.range(0)));
  const std::vector<std::string> add = {"class", "add",   "dev", "d0",  "parent", "1:1",
                                        "classid", "1:ffff", "htb", "rate", "1mbit"};
  std::ostringstream out;
  for (auto _ : state) {
    Config cfg = Config::parse(text, "bench.tc");
    cfg.execute(add, out, {});
    const std::string written = cfg.serialize();
    benchmark::DoNotOptimize(std::as_const(written));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_TcBuild(benchmark::State& state) {
  const Config cfg = Config::parse(htb_config(static_cast<int>(state.range(0))), "bench.tc");
  for (auto _ : state) {
    txpath::tc::Tree tree = cfg.build("d0");
    benchmark::DoNotOptimize(std::as_const(tree));
  }
  state.SetItemsProcessed(state.iterations() * std::min<int64_t>(state.range(0), kPerDevice));
}

void BM_TcBatch(benchmark::State& state) {
  const auto n = static_cast<int>(std::min<int64_t>(state.range(0), kPerDevice - 1));
  const std::string base = htb_config(1);
  std::string lines;
  char line[128];
  for (int i = 2; i < n + 2; ++i) {
    std::snprintf(line, sizeof line, "class add dev d0 parent 1:1 classid 1:%x htb rate 1mbit ceil 10gbit\n", i);
    lines += line;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("txpath-bench-batch-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "x.tc").string(), batch = (dir / "b").string();
  std::ofstream(batch) << lines;
  const std::vector<std::string> args = {"--config", path, "-batch", batch};
  std::ostringstream out, err;
  for (auto _ : state) {
    state.PauseTiming();
    std::ofstream(path, std::ios::trunc) << base;
    state.ResumeTiming();
    if (txpath::tc::run(args, out, err) != 0) state.SkipWithError("the batch failed");
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_TcLiveDocument(benchmark::State& state) {
  Config cfg = Config::parse(htb_config(static_cast<int>(state.range(0))), "bench.tc");
  const txpath::tc::Tree tree = cfg.build("d0");
  Config::ShowOptions show;
  show.stats = true;
  const std::vector<std::string> cmd = {"class", "show", "dev", "d0"};
  for (auto _ : state) {
    const std::string doc = txpath::tc::stats_document(txpath::tc::collect_counters(tree.nodes), "d0");
    show.fetch_live = [&doc](const std::string&) { return Config::ShowOptions::LiveDocument{doc, ""}; };
    std::ostringstream out;
    cfg.execute(cmd, out, show);
    benchmark::DoNotOptimize(out.tellp());
  }
  state.SetItemsProcessed(state.iterations() * std::min<int64_t>(state.range(0), kPerDevice));
}

}  // namespace

BENCHMARK(BM_TcParse)->Arg(1000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TcLoad)->Arg(1000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TcCommand)->Arg(1000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TcBuild)->Arg(1000)->Arg(10'000)->Arg(50'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TcBatch)->Arg(1000)->Arg(2000)->Arg(4000)->Arg(10'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TcLiveDocument)->Arg(1000)->Arg(10'000)->Arg(50'000)->Unit(benchmark::kMillisecond);
