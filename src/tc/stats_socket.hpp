// SPDX-License-Identifier: MIT
// The live-statistics endpoint of a running txpath process, and its client (`txpath tc -s`).
//
// Where: a unix stream socket FILE in a directory only its owner can enter (stats_directory()):
//   root                      /run/txpath/stats/      (0700; /run/txpath root-owned, not writable
//                                                      by group or others)
//   others, XDG_RUNTIME_DIR   $XDG_RUNTIME_DIR/txpath/ (XDG_RUNTIME_DIR must be the user's own,
//                                                      with no group/other permission bits)
//   others, no XDG_RUNTIME_DIR /tmp/txpath-<uid>/     (0700; refused if it exists with another
//                                                      owner or looser mode)
// The directory is created 0700 when missing and checked with lstat() before every use (a real
// directory, owned by the effective uid, no group/other bits); anything else is refused with one
// line. So another user can neither put a socket where we look nor connect to ours: the abstract
// namespace this replaced had no permissions at all. The directory is per effective uid: root's
// `tc -s` reads root's bench, a user's reads that user's. Root does not use XDG_RUNTIME_DIR
// (it is /run/user/0 in a login shell and unset under sudo: the two would not meet).
//
// Each connection is answered with one document — the string snapshot() returns at accept time,
// a JSON document — and closed. Credentials are checked on both ends (SO_PEERCRED): the server
// answers only its own uid or root; the client accepts a document only from a server running as
// its own effective uid or root.
//
// Wire format (private to this file pair): the decimal length of the document, '\n', then the
// document. Neither end handles more than kMaxDocument bytes: the server does not send a larger
// document, and the client refuses a header announcing one before reading on, and never holds
// more than it has received. fetch_stats() checks the length, so a document cut short (server
// stopped mid-send) is never returned as if it were whole.
//
// Served by one thread with poll(): the listening socket, a stop eventfd, and every client still
// being written (non-blocking, MSG_NOSIGNAL: a client that goes away costs an EPIPE, never a
// signal). At most kMaxClients are written at a time, holding at most kMaxBuffered bytes (more
// wait in the listen backlog); a client that has not taken its whole document within
// kClientTimeout of its accept is dropped, however slowly it reads. The snapshot is taken before
// the first byte is written, so a client's pace never reaches the queue or its senders.
//
// One server per endpoint: a lock file beside the socket (NAME.lock, flock) is held for the
// server's life. A socket file left by a process that died (nothing listens: ECONNREFUSED) is
// replaced by the next server; a live one is "in use by another process". The server removes
// its socket and lock files when it stops, if they are still its own (same inode).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "tc/socket_io.hpp"
#include "tc/unix_endpoint.hpp"

namespace txpath::tc {

// The largest document either end handles.
inline constexpr uint64_t kMaxDocument = uint64_t{16} << 20;

// A unix-socket endpoint at `path` (in a private directory: checked, see above), served by one
// thread: each connection receives the string snapshot() returns (a JSON document), then is
// closed. RAII: the destructor stops the thread, closes the socket and removes its files. Throws
// ConfigError if another live process serves the path ("stats endpoint ... is in use by another
// process"), or if the directory is not private or the socket cannot be set up. snapshot() runs
// on the server thread, one call per connection; if it throws, or returns more than kMaxDocument
// bytes, that connection is closed without a document.
class StatsServer {
 public:
  StatsServer(std::string path, std::function<std::string()> snapshot);
  StatsServer(const StatsServer&) = delete;
  StatsServer& operator=(const StatsServer&) = delete;

  const std::string& path() const noexcept { return endpoint_.path(); }

  static constexpr int kMaxClients = 64;
  static constexpr uint64_t kMaxBuffered = uint64_t{64} << 20;  // documents held for clients
  static constexpr std::chrono::seconds kClientTimeout{10};

  // The endpoint's flock()ed lock file; removed while still held when the server ends.
  struct HeldLock {
    wire::Fd fd;
    std::string path;
    ~HeldLock();
  };

 private:
  void serve() noexcept;

  std::function<std::string()> snapshot_;
  HeldLock lock_;                // NAME.lock, flock()ed for the server's life
  wire::UnixEndpoint endpoint_;  // last: its destructor stops the thread that calls snapshot_
};

// What fetch_stats() got: the document, or why not (one line, user text escaped).
struct Fetched {
  std::optional<std::string> document;
  bool no_server = false;  // nobody serves the path (no socket file, or nothing listens)
  std::string why_not;
};

// Connects to the endpoint at `path` and reads its document, within `timeout` for connect and
// read together. No document if nobody serves it, the server runs as another user (neither our
// effective uid nor root), the header announces more than kMaxDocument bytes, the answer is cut
// short or malformed, or it is not complete in time. Throws nothing.
Fetched fetch_stats(const std::string& path, std::chrono::milliseconds timeout);

// The endpoint directory of this effective uid (see above), checked: throws ConfigError (one
// line) if it, or the directory it lives in, is not private. `create`: make it (0700) when
// missing; else a missing directory is returned as it is (nobody serves anything there).
std::string stats_directory(bool create);

// The endpoint path of configuration file `config_path` and device `dev` in stats_directory():
// a hash (32 hex digits) of realpath(config_path) (or the path made absolute if it does not
// exist) and the device, '-', then a readable tail "FILE-NAME@DEV" (bytes outside printable
// ASCII as '_', cut from the front to fit sun_path). Throws ConfigError as stats_directory().
std::string stats_endpoint(const std::string& config_path, const std::string& dev,
                           bool create = false);

// The configuration path stats_endpoint() names an endpoint by: realpath(config_path), or the path
// made absolute (and lexically normal) if it does not exist. The live document's "config".
std::string endpoint_config_path(const std::string& config_path);

// The file name part of stats_endpoint() for a directory of `dir_len` bytes. Throws ConfigError
// if the directory leaves no room for the hash.
std::string stats_endpoint_name(const std::string& config_path, const std::string& dev,
                                std::size_t dir_len);

// Checks that `dir` is a real directory (not a symlink) owned by the effective uid with no
// group/other permission bits; with `create`, makes it 0700 first when missing. Throws
// ConfigError naming the directory, its owner and mode otherwise. Returns false if it is missing
// (and not created).
bool check_private_directory(const std::string& dir, bool create);

// The longest socket path (sizeof(sockaddr_un::sun_path) - 1).
std::size_t max_endpoint_path() noexcept;

}  // namespace txpath::tc
