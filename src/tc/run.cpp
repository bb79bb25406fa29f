// SPDX-License-Identifier: MIT
// `txpath tc`: tc's command line over a configuration file.
//
//   txpath tc [--config FILE] [-s] [-d] [-j] [-p] [-force] { -batch FILE | OBJECT COMMAND ... }
//
// The file (--config, else $TXPATH_TC, else ./txpath.tc) is read, the command applied and, if it
// changed anything, rewritten — all under an exclusive flock() on the file, so concurrent
// invocations serialise. -batch runs one command per line and stops at the first failure (with
// -force it goes on); the changes of the lines that succeeded are kept, as tc's are.
// Errors print one line, "Error: ...", and give tc's exit status (1 parse, 2 rejected, 255 args).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "qdisc/spec.hpp"
#include "tc/internal.hpp"
#include "tc/stats_socket.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

// An open, flock()ed configuration file (created empty if missing when `write`).
class LockedFile {
 public:
  LockedFile(const std::string& path, bool write) : path_(path) {
    fd_ = ::open(path.c_str(), (write ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      if (!write && errno == ENOENT) return;  // no file: an empty configuration
      throw ConfigError("configuration \"" + escape_user_text(path) + "\": " + std::strerror(errno));
    }
    while (::flock(fd_, write ? LOCK_EX : LOCK_SH) != 0) {
      if (errno != EINTR) throw ConfigError("configuration \"" + escape_user_text(path) + "\": flock: " + std::strerror(errno));
    }
  }
  ~LockedFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

  std::string read() const {
    std::string text;
    if (fd_ < 0) return text;
    char buf[65536];
    ::lseek(fd_, 0, SEEK_SET);
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw ConfigError("configuration \"" + escape_user_text(path_) + "\": read: " + std::strerror(errno));
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    return text;
  }
  void write(const std::string& text) const {
    if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) != 0)
      throw ConfigError("configuration \"" + escape_user_text(path_) + "\": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw ConfigError("configuration \"" + escape_user_text(path_) + "\": write: " + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

const char* kUsage =
    "Usage: txpath tc [--config FILE] [-s] [-d] [-j] [-p] [-force] OBJECT COMMAND [ARGS]\n"
    "       txpath tc [--config FILE] [-force] -batch FILE\n"
    "where  OBJECT := { qdisc | class | link }\n"
    "       qdisc { add | change | replace | del } dev NAME { root | parent CLASSID } [ handle ID ] KIND [ OPTIONS ]\n"
    "       qdisc show [ dev NAME ]\n"
    "       class { add | change | replace | del } dev NAME parent ID classid ID KIND [ OPTIONS ]\n"
    "       class show dev NAME\n"
    "       link { add | set | del } dev NAME [ txqueuelen N ] [ mtu N ];  link show [ dev NAME ]\n"
    "       KIND := { pfifo_fast | pfifo | bfifo | pfifo_head_drop | prio | tbf | fq_codel | htb | fq }\n"
    "The configuration file is --config FILE, else $TXPATH_TC, else ./txpath.tc.\n";

}  // namespace

Config Config::load(const std::string& path) {
  const LockedFile file(path, /*write=*/false);  // shared lock: no half-written file
  return Config::parse(file.read(), path);
}

std::string default_config_path() {
  const char* env = std::getenv("TXPATH_TC");
  return env && *env ? env : "txpath.tc";
}

int run(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  Config::ShowOptions show;
  std::string config_path = default_config_path();
  std::optional<std::string> batch;
  bool force = false;
  std::size_t i = 0;
  try {
    for (; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.empty() || a[0] != '-') break;
      if (a == "-s" || a == "-stats" || a == "-statistics") show.stats = true;
      else if (a == "-d" || a == "-details") show.details = true;
      else if (a == "-j" || a == "-json") show.json = true;
      else if (a == "-p" || a == "-pretty") show.pretty = true;
      else if (a == "-force" || a == "-f") force = true;
      else if (a == "-b" || a == "-batch") {
        if (i + 1 >= args.size()) throw TcArgError("-batch needs a file name");
        batch = args[++i];
      } else if (a == "--config" || a == "-config" || a == "-c") {
        if (i + 1 >= args.size()) throw TcArgError("--config needs a file name");
        config_path = args[++i];
      } else if (a.rfind("--config=", 0) == 0) {
        config_path = a.substr(9);
      } else if (a == "-h" || a == "-help" || a == "--help") {
        out << kUsage;
        return 0;
      } else {
        throw TcArgError("Option \"" + escape_user_text(a) + "\" is unknown, try \"txpath tc -help\".");
      }
    }
    if (config_path.empty()) throw TcArgError("the configuration file name is empty");
    const std::span<const std::string> command = args.subspan(i);
    if (!batch && command.empty()) {
      err << kUsage;
      return 255;
    }
    if (!batch && command[0] == "help") {
      out << kUsage;
      return 0;
    }
    show.fetch_live = [&config_path](const std::string& dev) { return fetch_live(config_path, dev); };
    show.note = [&err](const std::string& line) { err << "txpath tc: " << line << "\n"; };

    const bool is_show = !batch && (command.size() == 1 || command[1].rfind("sh", 0) == 0 ||
                                    command[1].rfind("li", 0) == 0 || command[1] == "ls" ||
                                    command[1] == "lst");
    LockedFile file(config_path, /*write=*/!is_show);
    Config cfg = Config::parse(file.read(), config_path);

    if (!batch) {
      if (cfg.execute(command, out, show)) file.write(cfg.serialize());
      return 0;
    }
    std::string text;
    if (*batch == "-") {
      std::ostringstream s;
      s << std::cin.rdbuf();
      text = s.str();
    } else {
      std::ifstream in(*batch);
      if (!in) throw ConfigError("Cannot open file \"" + escape_user_text(*batch) + "\" for reading: " + std::strerror(errno));
      std::ostringstream s;
      s << in.rdbuf();
      text = s.str();
    }
    int status = 0;
    bool changed = false;
    std::size_t line_no = 0;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      ++line_no;
      const auto words = batch_words(line);
      if (words.empty()) continue;
      try {
        changed = cfg.execute(words, out, show) || changed;
      } catch (const ConfigError& e) {
        err << "Error: " << e.what() << "\n";
        err << "Command failed " << *batch << ":" << line_no << "\n";
        status = exit_status(e);
        if (!force) break;
      }
    }
    if (changed) file.write(cfg.serialize());
    return status;
  } catch (const ConfigError& e) {
    err << "Error: " << e.what() << "\n";
    return exit_status(e);
  } catch (const std::exception& e) {
    err << "Error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace txpath::tc
