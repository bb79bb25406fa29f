// SPDX-License-Identifier: MIT
// The OpenMetrics renderer and the exporter's small parsers (txpath/metrics.hpp).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <set>
#include <string>
#include <vector>

#include "exporter/http_server.hpp"
#include "tc/stats_socket.hpp"
#include "txpath/metrics.hpp"
#include "txpath/tc.hpp"

namespace txpath::metrics {
namespace {

QueueSnapshot one_queue() {
  QueueSnapshot q;
  q.config = "/etc/eth1.tc";
  q.dev = "eth1";
  QueueSnapshot::Entry root;
  root.handle = "1:";
  root.parent = "root";
  root.kind = "htb";
  root.stats = {1000, 42, 3, 5, 1, 300, 2};
  q.entries.push_back(root);
  QueueSnapshot::Entry cls;
  cls.is_class = true;
  cls.handle = "1:10";
  cls.parent = "1:";
  cls.kind = "htb";
  cls.stats.packets = 7;
  cls.xstats = {{"lended", 4}, {"tokens", -12}, {"lended", 9}};
  q.entries.push_back(cls);
  return q;
}

TEST(Metrics, EscapesLabelValues) {
  EXPECT_EQ(escape_label_value("plain"), "plain");
  EXPECT_EQ(escape_label_value("a\\b"), "a\\\\b");
  EXPECT_EQ(escape_label_value("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(escape_label_value("two\nlines"), "two\\nlines");
}

TEST(Metrics, RendersLabelledCountersAndGauges) {
  const std::vector<QueueSnapshot> queues{one_queue()};
  const std::string text = render(queues);
  const std::string q = "{config=\"/etc/eth1.tc\",dev=\"eth1\",handle=\"1:\",parent=\"root\",kind=\"htb\"}";
  EXPECT_NE(text.find("# TYPE txpath_qdisc_packets counter\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_packets_total" + q + " 42\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_bytes_total" + q + " 1000\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_drops_total" + q + " 3\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_overlimits_total" + q + " 5\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_requeues_total" + q + " 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE txpath_qdisc_backlog_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_backlog_bytes" + q + " 300\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_qdisc_backlog_packets" + q + " 2\n"), std::string::npos);
  const std::string c = "{config=\"/etc/eth1.tc\",dev=\"eth1\",handle=\"1:10\",parent=\"1:\",kind=\"htb\"";
  EXPECT_NE(text.find("txpath_class_packets_total" + c + "} 7\n"), std::string::npos);
  EXPECT_NE(text.find("txpath_class_xstat" + c + ",name=\"tokens\"} -12\n"), std::string::npos);
  // A name tc prints twice: one sample (the first), not a duplicate label set.
  EXPECT_NE(text.find("txpath_class_xstat" + c + ",name=\"lended\"} 4\n"), std::string::npos);
  EXPECT_EQ(text.find(",name=\"lended\"} 9"), std::string::npos);
  EXPECT_EQ(text.find("txpath_qdisc_backlog_bytes_total"), std::string::npos);  // gauges: no _total
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
}

TEST(Metrics, EveryFamilyHasHelpAndTypeBeforeItsSamples) {
  QueueSnapshot other = one_queue();
  other.config = "/other.tc";
  const std::vector<QueueSnapshot> queues{one_queue(), other};
  for (const Format format : {Format::kOpenMetrics, Format::kPrometheusText}) {
    const std::string text = render(queues, 2, format);
    std::string family;            // the current # TYPE's family
    std::set<std::string> seen;    // families begun: each once, its samples together
    std::string helped;            // the family of the last # HELP
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t end = text.find('\n', pos);
      const std::string line = text.substr(pos, end - pos);
      pos = end + 1;
      if (line.starts_with("# HELP ")) {
        helped = line.substr(7, line.find(' ', 7) - 7);
        continue;
      }
      if (line.starts_with("# TYPE ")) {
        family = line.substr(7, line.find(' ', 7) - 7);
        EXPECT_EQ(family, helped) << "no # HELP just before " << line;
        EXPECT_TRUE(seen.insert(family).second) << "family begun twice: " << family;
        continue;
      }
      if (line == "# EOF") {
        EXPECT_EQ(format, Format::kOpenMetrics);
        EXPECT_EQ(pos, text.size());
        continue;
      }
      const std::string name = line.substr(0, line.find('{'));
      if (format == Format::kOpenMetrics)
        EXPECT_TRUE(name == family || name == family + "_total") << line << " under " << family;
      else
        EXPECT_EQ(name, family) << line;
    }
    EXPECT_NE(text.find("txpath_exporter_endpoints{state=\"failed\"} 2\n"), std::string::npos);
  }
}
// Issue 31: two processes on two files that name the same device gave the same label sets, and
// an OpenMetrics parser refused the whole page. The configuration labels every series; a queue
// whose (config, dev) came before is left out, never given twice.
TEST(Metrics, TheConfigurationTellsTwoQueuesOnOneDeviceApart) {
  QueueSnapshot a = one_queue(), b = one_queue();
  a.config = "/etc/txpath/a.tc";
  b.config = "/srv/\"b\".tc";
  const std::vector<QueueSnapshot> queues{a, b, a};
  for (const Format format : {Format::kOpenMetrics, Format::kPrometheusText}) {
    const std::string text = render(queues, 0, format);
    EXPECT_NE(text.find("txpath_qdisc_packets_total{config=\"/etc/txpath/a.tc\",dev=\"eth1\",handle=\"1:\""),
              std::string::npos) << text;
    EXPECT_NE(text.find("txpath_qdisc_packets_total{config=\"/srv/\\\"b\\\".tc\",dev=\"eth1\",handle=\"1:\""),
              std::string::npos) << text;
    std::set<std::string> series;  // name{labels}: each once
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t end = text.find('\n', pos);
      const std::string line = text.substr(pos, end - pos);
      pos = end + 1;
      if (line.starts_with("#")) continue;
      EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << "twice: " << line;
    }
    EXPECT_NE(text.find("txpath_exporter_endpoints{state=\"read\"} 2\n"), std::string::npos);
    EXPECT_NE(text.find("txpath_exporter_endpoints{state=\"failed\"} 1\n"), std::string::npos);
  }
}

// Content negotiation: OpenMetrics only for a client that asks for it (and prefers it).
TEST(Metrics, NegotiatesTheFormatFromAccept) {
  EXPECT_EQ(negotiate_format(""), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("*/*"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text"), Format::kOpenMetrics);
  EXPECT_EQ(negotiate_format("Application/OpenMetrics-Text; Version=1.0.0"), Format::kOpenMetrics);
  // Prometheus 2.x's own header.
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                             "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Format::kOpenMetrics);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=0.4, text/plain;q=0.5"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain;q=0.5, application/openmetrics-text;q=0.5"), Format::kOpenMetrics);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=0"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=2.0.0"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=banana"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=1.5"), Format::kPrometheusText);
  EXPECT_EQ(negotiate_format(" , ;;, application/openmetrics-text ; q=0.9 ,"), Format::kOpenMetrics);
  EXPECT_EQ(content_type(Format::kPrometheusText), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(content_type(Format::kOpenMetrics), "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

// promtool lints the classic text format: a counter's family is named as its samples ("_total"),
// # HELP and # TYPE on every family, no "# EOF".
TEST(Metrics, TheClassicTextFormatNamesCountersWithTotal) {
  const std::vector<QueueSnapshot> queues{one_queue()};
  const std::string text = render(queues, 0, Format::kPrometheusText);
  EXPECT_NE(text.find("# HELP txpath_qdisc_packets_total Packets sent (qdisc)\n"
                      "# TYPE txpath_qdisc_packets_total counter\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE txpath_qdisc_backlog_bytes gauge\n"), std::string::npos);
  EXPECT_EQ(text.find("# TYPE txpath_qdisc_packets counter"), std::string::npos);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  const std::string om = render(queues, 0, Format::kOpenMetrics);
  EXPECT_NE(om.find("# TYPE txpath_qdisc_packets counter\n"), std::string::npos);
  EXPECT_TRUE(om.ends_with("# EOF\n"));
}

TEST(Metrics, EscapesHostileDeviceNames) {
  QueueSnapshot q = one_queue();
  q.dev = "a\"b\\c\nd";
  const std::vector<QueueSnapshot> queues{q};
  const std::string text = render(queues);
  EXPECT_NE(text.find("dev=\"a\\\"b\\\\c\\nd\""), std::string::npos);
  EXPECT_EQ(text.find("c\nd"), std::string::npos);
}

TEST(Metrics, ParsesTheLiveDocument) {
  const std::string doc =
      R"({"dev":"eth0","qdiscs":{"1:":{"bytes":10,"packets":2,"drops":0,"overlimits":0,"requeues":0,)"
      R"("backlog":0,"qlen":0,"xstats":[],"kind":"htb","parent":"root"}},)"
      R"("classes":{"1:10":{"bytes":5,"packets":1,"xstats":[["tokens",7]],"kind":"htb","parent":"1:"}}})";
  const auto q = parse_stats_document(doc, "fallback");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->dev, "eth0");
  ASSERT_EQ(q->entries.size(), 2u);
  EXPECT_EQ(q->entries[0].handle, "1:");
  EXPECT_EQ(q->entries[0].kind, "htb");
  EXPECT_EQ(q->entries[0].stats.packets, 2u);
  EXPECT_TRUE(q->entries[1].is_class);
  EXPECT_EQ(q->entries[1].parent, "1:");
  ASSERT_EQ(q->entries[1].xstats.size(), 1u);
  EXPECT_EQ(q->entries[1].xstats[0].second, 7);
  EXPECT_EQ(parse_stats_document(R"({"qdiscs":{}})", "d9")->dev, "d9");
  EXPECT_FALSE(parse_stats_document(R"({"error":"the queue did not answer"})", "d"));
  EXPECT_FALSE(parse_stats_document("not json", "d"));
}

// The live document (tc::stats_document) names the device and each entry's kind and parent.
TEST(Metrics, LiveDocumentNamesDevKindAndParent) {
  tc::TreeCounters counters;
  counters.entries.push_back({0x10000, tc::kRoot, false, {100, 4}, {}, "htb", tc::kRoot, {}});
  counters.entries.push_back({0x10010, tc::kRoot, true, {50, 2}, {{"tokens", 3}}, "htb", 0x10001, {}});
  const auto q = parse_stats_document(tc::stats_document(counters, "d\"x"), "fallback");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->dev, "d\"x");
  ASSERT_EQ(q->entries.size(), 2u);
  EXPECT_EQ(q->entries[0].parent, "root");
  EXPECT_EQ(q->entries[0].kind, "htb");
  EXPECT_EQ(q->entries[1].handle, "1:10");
  EXPECT_EQ(q->entries[1].parent, "1:1");
  EXPECT_EQ(q->entries[1].kind, "htb");
}

TEST(Metrics, ParsesListenAddresses) {
  EXPECT_EQ(parse_listen("127.0.0.1:9101").host, "127.0.0.1");
  EXPECT_EQ(parse_listen("127.0.0.1:9101").port, 9101);
  EXPECT_EQ(parse_listen("[::1]:80").host, "::1");
  EXPECT_EQ(parse_listen("localhost:0").port, 0);
  for (const char* bad : {"9101", ":9101", "host:", "host:65536", "host:-1", "host:12a", "::1:80", "[::1:80",
                          "[]:80"})
    EXPECT_THROW(parse_listen(bad), BadListen) << bad;
  try {
    parse_listen("x\ny");
    FAIL();
  } catch (const BadListen& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

// What the server at 127.0.0.1:`port` answers to `request` (until it closes).
std::string http_exchange(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return got;
}

// The server on its own thread, stopped from another (as a signal handler or
// BackgroundExporter's destructor does); each request answered with one body() call.
TEST(Metrics, HttpServerAnswersAndStops) {
  std::atomic<int> calls{0};
  HttpServer server(parse_listen("127.0.0.1:0"), [&calls](Format) {
    ++calls;
    return std::string("# EOF\n");
  });
  const std::string bound = server.bound();
  const uint16_t port = static_cast<uint16_t>(std::stoi(bound.substr(bound.rfind(':') + 1)));
  std::thread serving([&server] { server.run(); });
  const std::string ok =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n\r\n");
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 200 OK\r\n")) << ok;
  EXPECT_NE(ok.find("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(ok.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(ok.ends_with("\r\n\r\n# EOF\n")) << ok;
  EXPECT_TRUE(http_exchange(port, "PUT /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
  EXPECT_TRUE(http_exchange(port, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
  // Exactly the limit, nothing unread: the answer is not lost to a reset.
  EXPECT_TRUE(http_exchange(port, std::string(HttpServer::kMaxRequest, 'a')).starts_with("HTTP/1.1 431"));
  EXPECT_EQ(calls.load(), 1);  // only the GET /metrics built a body
  server.stop();
  serving.join();
}

// A server on its own thread for the duration of a test.
struct Serving {
  std::atomic<int> calls{0};
  HttpServer server{parse_listen("127.0.0.1:0"), [this](Format) {
                      ++calls;
                      return std::string("# EOF\n");
                    }};
  uint16_t port = static_cast<uint16_t>(std::stoi(server.bound().substr(server.bound().rfind(':') + 1)));
  std::thread thread{[this] { server.run(); }};
  ~Serving() {
    server.stop();
    thread.join();
  }
};

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// What cpp-httplib changed or could have: HEAD is not routed to GET (405), an unknown method
// is a request httplib does not parse (400, was 405 before cpp-httplib), a query is ignored, an
// error answer is plain text with the reason.
TEST(Metrics, HttpServerServesOnlyGetMetrics) {
  Serving s;
  EXPECT_TRUE(http_exchange(s.port, "GET /metrics?x=1 HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
  const std::string head = http_exchange(s.port, "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(head.starts_with("HTTP/1.1 405")) << head;
  EXPECT_NE(head.find("Allow: GET\r\n"), std::string::npos) << head;
  EXPECT_TRUE(http_exchange(s.port, "FOO /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400"));
  const std::string bad = http_exchange(s.port, "garbage\r\n\r\n");
  EXPECT_TRUE(bad.starts_with("HTTP/1.1 400")) << bad;
  EXPECT_TRUE(bad.ends_with("\r\n\r\nBad Request\n")) << bad;
  EXPECT_NE(bad.find("Connection: close\r\n"), std::string::npos) << bad;
  const std::string big = http_exchange(s.port, "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n");
  EXPECT_TRUE(big.empty() || big.starts_with("HTTP/1.1 431")) << big.substr(0, 40);
  // The 431 alone: nothing of httplib's own answer after it.
  if (!big.empty()) {
    EXPECT_TRUE(big.ends_with("\r\n\r\nRequest Header Fields Too Large\n")) << big;
  }
  // (A request line httplib cannot parse is 400 at once, without waiting for the rest.)
  const std::string line = "GET /metrics HTTP/1.1\r\nX: ";
  const std::string exact = http_exchange(s.port, line + std::string(HttpServer::kMaxRequest - line.size(), 'a'));
  EXPECT_TRUE(exact.starts_with("HTTP/1.1 431")) << exact;
  EXPECT_TRUE(exact.ends_with("\r\n\r\nRequest Header Fields Too Large\n")) << exact;
  EXPECT_EQ(s.calls.load(), 1);
}

// A slowloris client that keeps trickling bytes is still dropped kReadTimeout after it was
// taken up (a deadline for the whole head, not per read as httplib's own timeout is); stop()
// drops a client in progress at once.
TEST(Metrics, HttpServerDropsATricklingClientAtItsDeadline) {
  Serving s;
  const int fd = connect_to(s.port);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(::send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL), 23);
  bool dropped = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(12)) {
    if (::send(fd, "X", 1, MSG_NOSIGNAL) != 1) { dropped = true; break; }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 300) > 0) {
      char c;
      if (::recv(fd, &c, 1, MSG_DONTWAIT) <= 0) { dropped = true; break; }
    }
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(dropped);
  EXPECT_GE(took, HttpServer::kReadTimeout - std::chrono::milliseconds(500));
  EXPECT_LT(took, HttpServer::kReadTimeout + std::chrono::seconds(3));
  ::close(fd);
  const int waiting = connect_to(s.port);  // in progress when the server stops
  const auto stop_start = std::chrono::steady_clock::now();
  s.server.stop();
  s.thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_start, std::chrono::seconds(2));
  ::close(waiting);
  s.thread = std::thread([] {});  // for ~Serving
}

// Issue 31: the endpoints were read one after the other, each within 2 s, so stalled processes
// (a socket that accepts and never answers) held a scrape 2 s each. Now they are read in parallel
// and all within the scrape's one timeout. Run in a child as another user (root's endpoint
// directory is shared with every running bench), in a private XDG_RUNTIME_DIR of its own.
TEST(Metrics, StalledEndpointsHoldTheScrapeNoLongerThanItsTimeout) {
  char dir[] = "/tmp/txpath-metrics-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  constexpr uid_t kNobody = 65534;
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown(dir, kNobody, kNobody), 0);
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (root && (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
                 ::setresuid(kNobody, kNobody, kNobody) != 0))
      ::_exit(10);
    ::setenv("XDG_RUNTIME_DIR", dir, 1);
    std::vector<int> stalled;
    try {
      const std::string endpoints = tc::stats_directory(/*create=*/true);
      for (int i = 0; i < 4; ++i) {  // listening, never accepting: the connect succeeds, no answer
        const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const std::string path = endpoints + "/stalled-" + std::to_string(i);
        std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
        if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 4) != 0) ::_exit(11);
        stalled.push_back(s);
      }
      const tc::StatsServer live(tc::stats_endpoint(std::string(dir) + "/x.tc", "d0", true), [] {
        return std::string(R"({"dev":"d0","config":"/x.tc","qdiscs":{"1:":{"packets":3,"kind":"pfifo","parent":"root"}}})");
      });
      std::size_t failed = 0;
      const auto start = std::chrono::steady_clock::now();
      const std::vector<QueueSnapshot> got = scrape_live_endpoints(std::chrono::milliseconds(1000), &failed);
      const auto took = std::chrono::steady_clock::now() - start;
      if (failed != 4) ::_exit(12);
      if (got.size() != 1 || got[0].config != "/x.tc") ::_exit(13);
      // 1 s for all of them, with a generous second for a loaded machine (one after the other,
      // as before, they take 4 s).
      ::_exit(took < std::chrono::seconds(2) ? 0 : 14);
    } catch (...) {
      ::_exit(15);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 setuid, 11 bind, 12 not 4 failed, 13 the live one not read, "
                                       "14 took 2 s or more, 15 threw";
}

}  // namespace
}  // namespace txpath::metrics
