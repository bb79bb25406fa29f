// SPDX-License-Identifier: MIT
// `txpath bench` rounds in fresh processes, as pyperf runs its workers: each round is a new
// exec of this binary with the same arguments and a hidden --worker THREADS:ROUND, which writes
// run_bench_round()'s text on file descriptor 3, a pipe the parent reads back (stdout and stderr
// stay the parent's: progress lines, a pcap:/dev/stdout capture). No process-wide state (the TSC clock's
// calibration, the heap's and stack's layout, a thread's placement) outlives a round.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace txpath::cli {

inline constexpr int kWorkerFd = 3;   // where a worker writes its round
inline constexpr int kCaptureFd = 4;  // with --source: the parent's snapshot of the capture

// A worker that did not give a round: it exited with a status of its own after printing its own
// error line (reported: the parent adds nothing and exits with `status`), or it was killed, sent
// something that is not a round, or could not start (the message is the one line to print; exit 1).
struct WorkerFailed : std::runtime_error {
  WorkerFailed(const std::string& what, int status, bool reported)
      : std::runtime_error(what), status(status), reported(reported) {}
  int status;
  bool reported;
};

// Runs round `round` (from 0) at `threads` in a fresh process: /proc/self/exe with `args` (the
// command line after the program name) and --seed SEED --worker THREADS:ROUND, in its own
// process group (a terminal's ^C reaches the parent only; it forwards it) and killed if the
// parent dies. Returns the worker's text (at most 16 MiB) when it exited 0, or 128 + the
// signal the parent forwarded; an empty text when that signal killed it before it could stop
// (a stop during its start: nothing ran). Throws WorkerFailed otherwise.
// `stop_signal`: the stop signal the parent caught (0: none), forwarded to a worker that started
// just after it. `capture_fd` (-1: none): the capture's snapshot, the worker's kCaptureFd.
std::string run_round_in_worker(const std::vector<std::string>& args, uint64_t seed, int threads, int round,
                                const std::atomic<int>& stop_signal, int capture_fd);

// The worker's side: throws ConfigError (one line) unless file descriptor 3 is a pipe (--worker
// run by hand); then writes the round's text there (throws when the write fails).
void check_round_pipe();
void write_round_text(const std::string& text);

// From a signal handler (async-signal-safe): sends `sig` to the running worker, if any.
void signal_worker(int sig) noexcept;

}  // namespace txpath::cli
