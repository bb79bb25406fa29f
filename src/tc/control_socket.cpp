// SPDX-License-Identifier: MIT
// See control_socket.hpp. The listening socket, its thread and their teardown are a
// UnixEndpoint's (unix_endpoint.hpp). Invariants: the server thread alone touches the connection
// table; a connection whose go was read is answered before it is closed (handle()); nothing here
// raises a signal (MSG_NOSIGNAL) or throws out of the server thread.
#include "tc/control_socket.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "tc/socket_io.hpp"
#include "tc/stats_socket.hpp"
#include "tc/unix_endpoint.hpp"
#include "txpath/error.hpp"

namespace txpath::tc {

using namespace wire;

namespace {

constexpr const char* kSuffix = ".ctl";
constexpr std::size_t kSuffixLen = 4;
constexpr std::size_t kMaxHeader = 24;  // "<decimal length>\n"
constexpr char kGo = 'g';
// Slack a client adds to the server's bound after its go: the go's way there, the answer's back.
constexpr std::chrono::milliseconds kAnswerSlack{2000};

// Writes all of `data` to the non-blocking socket `fd` before `deadline`. False if the peer went
// away or was too slow.
bool write_all(int fd, const std::string& data, Clock::time_point deadline) noexcept {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const int left = ms_until(deadline);
    if (left == 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, left) < 0 && errno != EINTR) return false;
  }
  return true;
}

std::string framed(const std::string& doc) { return std::to_string(doc.size()) + '\n' + doc; }

// A frame being read: "<length>\n" then exactly that many bytes; nothing may follow it.
struct Frame {
  std::string data;
  std::optional<uint64_t> length;  // once the header is in
  std::size_t body = 0;            // where the document starts in data
  enum class State { partial, complete, bad } state = State::partial;

  // Takes `n` more bytes; sets state.
  void take(const char* p, std::size_t n) {
    data.append(p, n);
    if (!length) {
      const std::size_t nl = data.find('\n');
      if (nl == std::string::npos) {
        if (data.size() > kMaxHeader) state = State::bad;
        return;
      }
      uint64_t v = 0;
      bool ok = nl > 0 && nl <= kMaxHeader;
      for (std::size_t i = 0; ok && i < nl; ++i) {
        ok = data[i] >= '0' && data[i] <= '9';
        v = v * 10 + static_cast<uint64_t>(data[i] - '0');
      }
      if (!ok || v > kMaxDocument) {
        state = State::bad;
        return;
      }
      length = v;
      body = nl + 1;
    }
    const std::size_t have = data.size() - body;
    if (have > *length) state = State::bad;  // more than announced (a go sent too early)
    else if (have == *length) state = State::complete;
  }
  std::string document() const { return data.substr(body); }
};

}  // namespace

std::string control_endpoint(const std::string& config_path, const std::string& dev, bool create) {
  const std::string dir = stats_directory(create);
  // Room for the suffix is taken from the readable tail, as the stats endpoint's name is cut.
  return dir + "/" + stats_endpoint_name(config_path, dev, dir.size() + kSuffixLen) + kSuffix;
}

namespace {

sockaddr_un control_address(const std::string& path, socklen_t& len) {
  sockaddr_un addr;
  len = path_address(path, addr);
  if (len == 0) throw ConfigError("control endpoint path " + txpath::quoted(path) + " does not fit a unix socket address");
  return addr;
}

// The caller holds the endpoint's lock: a socket file here is a dead server's.
void bind_replacing_any(const std::string& path, int fd, const sockaddr_un& addr, socklen_t len) {
  struct stat old{};
  if (::lstat(path.c_str(), &old) == 0 && S_ISSOCK(old.st_mode)) ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0)
    throw ConfigError("control endpoint " + txpath::quoted(path) + ": bind: " + errno_text(errno));
}

UnixEndpoint control_listener(const std::string& path) {
  socklen_t len = 0;
  const sockaddr_un addr = control_address(path, len);
  return UnixEndpoint(path, "control endpoint", addr, len, SOMAXCONN,
                      [&](int fd, const sockaddr_un& a, socklen_t l) { bind_replacing_any(path, fd, a, l); });
}

std::string error_answer(const std::string& why, int status) {
  nlohmann::json a;
  a["error"] = why;
  a["status"] = status;
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Reads what `fd` has now into `f`. False when the connection is finished with (closed by the
// peer before a whole frame, an error, a frame that is not one).
bool read_some(int fd, Frame& f) noexcept {
  char buf[65536];
  try {
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        f.take(buf, static_cast<std::size_t>(n));
        if (f.state == Frame::State::bad) return false;
        continue;
      }
      if (n == 0) return f.state == Frame::State::complete;  // EOF: fine once the frame is whole
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  } catch (...) {
    return false;  // out of memory: dropped, nothing applied
  }
}

// Waits up to `timeout` for the client's go on `fd` (or the stop eventfd). True if it came.
bool read_go(int fd, int stop_fd, std::chrono::milliseconds timeout) noexcept {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    char c = 0;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n == 1) return c == kGo;
    if (n == 0) return false;  // the client went away: nothing applied
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const int left = ms_until(deadline);
    if (left == 0) return false;
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (::poll(p, 2, left) < 0 && errno != EINTR) return false;
    if (p[1].revents != 0) return false;  // stopping: a change not yet told to go is not taken
  }
}

}  // namespace

struct ControlServer::Conn {
  Fd fd;
  Frame request;
  Clock::time_point deadline;
};

ControlServer::ControlServer(std::string path, Prepare prepare)
    : prepare_(std::move(prepare)), endpoint_(control_listener(path)) {
  endpoint_.start([this] { serve(); });
}

ControlServer::ControlServer(std::string path, std::function<std::string(const std::string&)> handle)
    : ControlServer(std::move(path), [handle = std::move(handle)](const std::string& request) {
        ControlPlan plan;
        plan.commit = [handle, request] { return handle(request); };
        plan.within = kDefaultWithin;
        return plan;
      }) {}

void ControlServer::handle(Conn& c) noexcept {
  try {
    const Clock::time_point answer_by = Clock::now() + kGoTimeout;
    ControlPlan plan = prepare_(c.request.document());
    if (!plan.commit) {
      (void)write_all(c.fd.get(), framed(plan.answer), answer_by);
      return;
    }
    const nlohmann::json ready = {{"ready", true}, {"within_ms", plan.within.count()}};
    if (!write_all(c.fd.get(), framed(ready.dump()), answer_by)) return;  // gone: nothing applied
    if (!read_go(c.fd.get(), endpoint_.stop_fd(), kGoTimeout)) return;   // no go: nothing applied
    // From here on the client waits for this answer: it is always written.
    std::string answer;
    try {
      answer = plan.commit();
    } catch (const std::exception& e) {
      answer = error_answer(e.what(), 1);
    } catch (...) {
      answer = error_answer("the change failed", 1);
    }
    (void)write_all(c.fd.get(), framed(answer), Clock::now() + kGoTimeout);
  } catch (...) {
    // out of memory before the go: closed without an answer, nothing applied
  }
}

void ControlServer::serve() noexcept {
  std::vector<Conn> conns;
  std::vector<pollfd> fds;
  Clock::time_point accept_pause{};  // after an accept error (EMFILE ...): retry later
  for (;;) {
    uint64_t buffered = 0;
    for (const Conn& c : conns) buffered += c.request.data.size();
    const Clock::time_point now = Clock::now();
    const bool accepting = static_cast<int>(conns.size()) < kMaxClients && accept_pause <= now;
    fds.clear();
    fds.push_back({endpoint_.stop_fd(), POLLIN, 0});
    fds.push_back({accepting ? endpoint_.listen_fd() : -1, POLLIN, 0});
    Clock::time_point wake = accept_pause > now ? accept_pause : Clock::time_point::max();
    for (std::size_t i = 0; i < conns.size(); ++i) {
      // Past kMaxBuffered only the oldest is read on: it alone can always complete.
      const bool read = buffered < kMaxBuffered || i == 0;
      fds.push_back({read ? conns[i].fd.get() : -1, POLLIN, 0});
      wake = std::min(wake, conns[i].deadline);
    }
    const int timeout = wake == Clock::time_point::max() ? -1 : std::max(ms_until(wake), 1);
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      return;  // cannot happen with valid descriptors
    }
    if (fds[0].revents != 0) return;  // stop: the connections close, nothing was applied for them

    // Read first, then expire: a request that arrived whole while the thread applied another
    // change is taken, however late it is read.
    std::vector<std::size_t> complete;
    std::size_t keep = 0;
    const Clock::time_point after_poll = Clock::now();
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      bool alive = true;
      if (fds[i + 2].revents != 0) alive = read_some(c.fd.get(), c.request);
      if (alive && c.request.state != Frame::State::complete && c.deadline <= after_poll) alive = false;
      if (!alive) continue;
      if (keep != i) conns[keep] = std::move(c);
      if (conns[keep].request.state == Frame::State::complete) complete.push_back(keep);
      ++keep;
    }
    conns.resize(keep);
    // Complete requests one at a time, in table order (accept order); each is closed after.
    for (const std::size_t i : complete) handle(conns[i]);
    std::erase_if(conns, [](const Conn& c) { return c.request.state == Frame::State::complete; });

    if (!accepting || !(fds[1].revents & POLLIN)) continue;
    while (static_cast<int>(conns.size()) < kMaxClients) {
      Fd fd(::accept4(endpoint_.listen_fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (fd.get() < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) accept_pause = Clock::now() + std::chrono::milliseconds(10);
        break;
      }
      // Another uid is closed on before a byte of its request is read (root may change anyone's).
      if (!trusted_uid(peer_uid(fd.get()))) continue;
      try {
        conns.push_back(Conn{std::move(fd), Frame{}, Clock::now() + kRequestTimeout});
      } catch (...) {
        break;  // out of memory: this one is dropped
      }
    }
  }
}

namespace {

// Connects to `path` and checks its server: our effective uid or root, or exactly `server_uid`.
std::string connect_checked(const std::string& path, Clock::time_point deadline, Fd& fd, bool* no_server,
                            std::optional<uid_t> server_uid) {
  if (!server_uid) return connect_trusted(path, deadline, fd, no_server);
  std::string why_not = connect_path(path, deadline, fd, no_server);
  if (!why_not.empty()) return why_not;
  const std::optional<uid_t> server = peer_uid(fd.get());
  if (server != server_uid)
    return "the endpoint is served by " + (server ? "uid " + std::to_string(*server) : std::string("an unknown user")) +
           ", not uid " + std::to_string(*server_uid) + ": not trusted";
  return "";
}

// Reads one frame from `fd` before `deadline` (the peer may close after it). "" or why not.
std::string read_frame(int fd, Clock::time_point deadline, std::string& doc, bool& ended) {
  Frame f;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      f.take(buf, static_cast<std::size_t>(n));
      if (f.state == Frame::State::bad) return "an answer that is not a txpath control answer";
      if (f.state == Frame::State::complete) {
        doc = f.document();
        return "";
      }
      continue;
    }
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
      ended = true;
      return "the process closed the connection";
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return "recv: " + errno_text(errno);
    const int left = ms_until(deadline);
    if (left == 0) return "no answer in time";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) < 0 && errno != EINTR) return "poll: " + errno_text(errno);
  }
}

// The server's announced bound, if `doc` is a ready message.
std::optional<std::chrono::milliseconds> ready_within(const std::string& doc) {
  const nlohmann::json j = nlohmann::json::parse(doc, nullptr, false);
  if (!j.is_object() || !j.contains("ready") || !j.contains("within_ms") || !j["within_ms"].is_number_unsigned())
    return std::nullopt;
  return std::chrono::milliseconds(
      std::min<uint64_t>(j["within_ms"].get<uint64_t>(), static_cast<uint64_t>(kMaxCommitWait.count())));
}

}  // namespace

ControlReply control_request(const std::string& path, const std::string& request,
                             std::chrono::milliseconds timeout, std::optional<uid_t> server_uid) {
  ControlReply r;
  try {
    const Clock::time_point deadline = Clock::now() + timeout;
    Fd fd;
    r.why_not = connect_checked(path, deadline, fd, &r.no_server, server_uid);  // nothing sent yet
    if (!r.why_not.empty()) return r;
    if (request.size() > kMaxDocument) {
      r.why_not = "the request takes " + std::to_string(request.size()) + " bytes, more than the limit of " +
                  std::to_string(kMaxDocument);
      return r;
    }
    if (!write_all(fd.get(), framed(request), deadline)) {
      r.ended = true;
      r.why_not = "the running process did not take the request in time";
      return r;
    }
    std::string first;
    r.why_not = read_frame(fd.get(), deadline, first, r.ended);
    if (!r.why_not.empty()) return r;  // no go sent: nothing was applied
    const std::optional<std::chrono::milliseconds> within = ready_within(first);
    if (!within) {
      r.answer = std::move(first);  // refused at once (or not a txpath server): nothing applied
      return r;
    }
    const char go = kGo;
    if (::send(fd.get(), &go, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
      r.ended = true;
      r.why_not = "the process closed the connection before it was told to apply the change";
      return r;
    }
    // Told to go: the server answers within its bound, or the process ended.
    const auto wait = *within + ControlServer::kGoTimeout + kAnswerSlack;
    std::string final_answer;
    bool ended = false;
    r.why_not = read_frame(fd.get(), Clock::now() + wait, final_answer, ended);
    if (r.why_not.empty()) {
      r.answer = std::move(final_answer);
    } else if (ended) {
      r.ended = true;  // whatever it applied is gone with the process: as if it never took it
      r.why_not = "the process ended while it applied the change: its tree is gone with it";
    } else {
      r.unknown = true;
      r.why_not = "told to apply the change, the process did not answer within " + std::to_string(wait.count()) +
                  " ms (stopped?): it may still apply it";
    }
  } catch (...) {
    r.answer.reset();
    r.why_not = "out of memory";
  }
  return r;
}

namespace {

// `name` under `at`, opened as a directory without following a link, if it is one owned by `uid`
// with no group/other permission bits; else an Fd of -1.
Fd private_directory_of(int at, const char* name, uid_t uid) {
  Fd fd(::openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st{};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
      (st.st_mode & 077) != 0)
    return Fd();
  return fd;
}

}  // namespace

std::vector<ControlTarget> user_control_endpoints(const std::string& config_path, const std::string& dev,
                                                  uid_t uid) {
  std::vector<ControlTarget> out;
  const std::string id = std::to_string(uid);
  const std::string tmp = "/tmp/txpath-" + id, run = "/run/user/" + id;
  struct Where {
    std::string shown;  // the directory's path, as the user's process named it
    Fd fd;
  };
  std::vector<Where> dirs;
  dirs.push_back({tmp, private_directory_of(AT_FDCWD, tmp.c_str(), uid)});
  if (Fd runtime = private_directory_of(AT_FDCWD, run.c_str(), uid); runtime.get() >= 0)
    dirs.push_back({run + "/txpath", private_directory_of(runtime.get(), "txpath", uid)});
  for (Where& w : dirs) {
    if (w.fd.get() < 0) continue;
    std::string name;
    try {
      name = stats_endpoint_name(config_path, dev, w.shown.size() + kSuffixLen) + kSuffix;
    } catch (const ConfigError&) {
      continue;  // no name fits there: no process of theirs serves there
    }
    struct stat st{};
    if (::fstatat(w.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // nobody serves it
    ControlTarget t;
    t.server_uid = uid;
    t.path = "/proc/self/fd/" + std::to_string(w.fd.get()) + "/" + name;
    if (!S_ISSOCK(st.st_mode))
      t.why_not = "uid " + id + "'s control endpoint " + txpath::quoted(w.shown + "/" + name) + " is not a socket";
    else if (t.path.size() > max_endpoint_path())
      t.why_not = "uid " + id + "'s control endpoint " + txpath::quoted(w.shown + "/" + name) +
                  " cannot be reached without following its path (too long for a socket address)";
    t.dir = std::make_shared<Fd>(std::move(w.fd));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace txpath::tc
