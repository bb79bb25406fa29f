// SPDX-License-Identifier: MIT
// The qdiscs of a testbed's host end (see testbed_qdisc.hpp): mq through rtnetlink, the user's
// tc-syntax qdisc by running tc(8) as a child process.
//
// Origin: txpath issue 5 (run_tc), 14 (mq), 30 (mq over rtnetlink; split from testbed.cpp).
// Invariant: tc runs with argv from the validated configuration, stdin /dev/null, its stdout and
// stderr collected; a failure becomes one DeviceError line quoting the command and tc's first
// stderr line, both escaped. Not a hot path; no atomics.
#include "net/testbed_qdisc.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "txpath/error.hpp"

extern char** environ;

namespace txpath::net {

namespace {

struct TcRun {
  int status = 0;  // exit status (128+ for signals)
  std::string out, err;
};

std::string joined_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string first_line_of(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

// Starts args[0] (looked up in PATH, then /usr/sbin and /sbin, which a user's PATH may lack)
// with stdout and stderr on the pipes' write ends; returns posix_spawn's error (0: started).
int spawn_tool(const std::vector<std::string>& args, int out_fd, int err_fd, pid_t& pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  for (const char* dir : {"/usr/sbin/", "/sbin/"}) {
    if (rc != ENOENT) break;
    const std::string path = dir + args[0];
    if (::access(path.c_str(), X_OK) == 0)
      rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  }
  posix_spawn_file_actions_destroy(&actions);
  return rc;
}

// Reads both pipes to their end (poll: neither may fill while the other is read).
void drain_tool_output(int out_fd, int err_fd, TcRun& run) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
}

TcRun run_tool(const std::vector<std::string>& args) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw DeviceError("testbed: pipe: " + std::string(std::strerror(errno)));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int saved = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw DeviceError("testbed: pipe: " + std::string(std::strerror(saved)));
  }
  pid_t pid = 0;
  const int rc = spawn_tool(args, out_pipe[1], err_pipe[1], pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (rc == ENOENT)
      throw DeviceError("testbed: the '" + args[0] +
                        "' command (Debian package iproute2) is not installed");
    throw DeviceError("testbed: cannot run " + joined_args(args) + ": " + std::strerror(rc));
  }
  TcRun run;
  drain_tool_output(out_pipe[0], err_pipe[0], run);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// Runs tc; a failure becomes one DeviceError line (command and complaint escaped: user text).
void must_run_tc(const std::vector<std::string>& args) {
  const TcRun r = run_tool(args);
  if (r.status == 0) return;
  std::string why = first_line_of(r.err);
  if (why.empty()) why = "exit status " + std::to_string(r.status);
  throw DeviceError("testbed: " + escape_user_text(joined_args(args)) + ": " +
                    escape_user_text(why));
}

std::vector<std::string> qdisc_words(const std::string& qdisc) {
  std::vector<std::string> out;
  std::istringstream in(qdisc);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

void set_testbed_qdiscs(const TestbedConfig& c, RtnlSocket& host) {
  const bool none = c.qdisc == "noqueue";
  if (none && c.kind == TestbedKind::veth) return;
  auto tc_replace = [&](std::vector<std::string> args) {
    for (auto& w : qdisc_words(c.qdisc)) args.push_back(std::move(w));
    must_run_tc(args);
  };
  if (c.queues == 1 || none) {
    tc_replace({"tc", "qdisc", "replace", "dev", c.host_if, "root"});
    return;
  }
  throw_if_refused(host.replace_root_mq(c.host_if, 1), "testbed",
                   "mq (handle 1:) at the root of " + c.host_if);
  for (uint32_t q = 1; q <= c.queues; ++q) {
    char parent[16];
    std::snprintf(parent, sizeof parent, "1:%x", q);
    tc_replace({"tc", "qdisc", "replace", "dev", c.host_if, "parent", parent});
  }
}

}  // namespace txpath::net
