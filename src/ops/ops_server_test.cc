// ops::OpsServer over real HTTP on 127.0.0.1:0, read with a plain blocking socket so that the
// status line, the Content-Type and the exact bodies are what is checked: health as
// kube-apiserver answers it (ok, verbose lists, failures, exclude, single checks), readiness
// following its checks, and /metrics as Prometheus text that Prometheus' own Python parser
// (Debian's python3-prometheus-client, from scripts/install-deps) and a strict line check both
// accept.

#include "ops/ops_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace muster::ops {
namespace {

using testing::HasSubstr;

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One HTTP/1.1 request with "Connection: close", read to the end. The server answers with a
// Content-Length (no chunking) for these endpoints.
Reply Get(uint16_t port, const std::string& target, const std::string& method = "GET") {
  Reply reply;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return reply;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return reply;
  }
  const std::string request = fmt::format(
      "{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", method,
      target);
  if (::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return reply;
  }
  std::string raw;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return reply;
  std::istringstream head(raw.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  if (line.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::atoi(line.c_str() + 9);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    reply.headers[Lower(line.substr(0, colon))] = value;
  }
  reply.body = raw.substr(head_end + 4);
  return reply;
}

// True when 127.0.0.1:port refuses a connection.
bool Refused(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0;
  ::close(fd);
  return refused;
}

std::unique_ptr<OpsServer> StartLocal(OpsServerOptions options = {}) {
  auto server = OpsServer::Start("127.0.0.1:0", std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_NE((*server)->port(), 0);
  return *std::move(server);
}

// --- addresses ---------------------------------------------------------------------------------

TEST(ParseHostPortTest, TakesComponentStyleAddresses) {
  auto a = ParseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  auto any = ParseHostPort(":9090");
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 9090);
  auto local = ParseHostPort("localhost:0");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->host, "127.0.0.1");
  EXPECT_EQ(local->port, 0);
  auto v6 = ParseHostPort("[::1]:65535");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 65535);
}

TEST(ParseHostPortTest, RefusesMalformedAddresses) {
  for (const char* bad : {"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "1.2.3.4:x",
                          "1.2.3.4:80x", "::1:80", "[::1]80", "[]:80", "[::1"}) {
    auto r = ParseHostPort(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(OpsServerTest, RefusesAHostNameAndAPortInUse) {
  EXPECT_FALSE(OpsServer::Start("example.invalid:0").ok());
  auto first = StartLocal();
  ASSERT_NE(first, nullptr);
  auto second = OpsServer::Start(fmt::format("127.0.0.1:{}", first->port()));
  EXPECT_FALSE(second.ok());
}

// --- health ------------------------------------------------------------------------------------

TEST(OpsServerTest, HealthzAndLivezAnswerOkWhileServing) {
  auto server = StartLocal();
  ASSERT_NE(server, nullptr);
  for (const char* path : {"/healthz", "/livez"}) {
    Reply r = Get(server->port(), path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "ok") << path;
    EXPECT_EQ(r.headers["content-type"], "text/plain; charset=utf-8") << path;
    EXPECT_EQ(r.headers["x-content-type-options"], "nosniff") << path;
  }
  EXPECT_EQ(Get(server->port(), "/healthz?verbose").body, "[+]ping ok\nhealthz check passed\n");
  EXPECT_EQ(Get(server->port(), "/livez?verbose=1").body, "[+]ping ok\nlivez check passed\n");
  EXPECT_EQ(Get(server->port(), "/livez/ping").body, "ok");

  const uint16_t port = server->port();
  server->Stop();
  EXPECT_EQ(server->port(), port);
  // Refused, so that a probe fails at once rather than waiting for an answer.
  EXPECT_TRUE(Refused(port)) << "the port still accepts connections once stopped";
  EXPECT_EQ(Get(port, "/healthz").status, 0);
  server->Stop();  // again: nothing happens
}

TEST(OpsServerTest, ReadyzWithNoChecksIsReady) {
  auto server = StartLocal();
  ASSERT_NE(server, nullptr);
  Reply r = Get(server->port(), "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(Get(server->port(), "/readyz?verbose").body, "readyz check passed\n");
}

TEST(OpsServerTest, ReadyzFollowsItsChecks) {
  auto server = StartLocal();
  ASSERT_NE(server, nullptr);
  std::mutex mu;
  std::string informers_reason = "informers have not listed";
  server->AddReadyCheck("informers", [&] {
    std::lock_guard lock(mu);
    return informers_reason;
  });
  server->AddReadyCheck("leader", [] { return std::string(); });
  auto set_reason = [&](std::string reason) {
    std::lock_guard lock(mu);
    informers_reason = std::move(reason);
  };

  // Failing: 500, always verbose, the reason shown.
  Reply r = Get(server->port(), "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_EQ(r.body,
            "[-]informers failed: informers have not listed\n[+]leader ok\nreadyz check failed\n");
  EXPECT_EQ(Get(server->port(), "/readyz/informers").body,
            "internal server error: informers have not listed\n");
  EXPECT_EQ(Get(server->port(), "/readyz/informers").status, 500);
  EXPECT_EQ(Get(server->port(), "/readyz/leader").status, 200);
  // Liveness is not readiness.
  EXPECT_EQ(Get(server->port(), "/livez").status, 200);

  // A failing check excluded by name no longer fails the whole; an unknown name is warned of.
  r = Get(server->port(), "/readyz?exclude=informers&exclude=nosuch&verbose");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            "[+]informers excluded: ok\n[+]leader ok\n"
            "warn: some health checks cannot be excluded: no matches for \"nosuch\"\n"
            "readyz check passed\n");

  // Passing: "ok", and the list only when asked.
  set_reason("");
  r = Get(server->port(), "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(Get(server->port(), "/readyz?verbose").body,
            "[+]informers ok\n[+]leader ok\nreadyz check passed\n");

  // And back: a reason over several lines stays on its check's line.
  set_reason("watch ended\nrelisting");
  r = Get(server->port(), "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body,
            "[-]informers failed: watch ended relisting\n[+]leader ok\nreadyz check failed\n");

  // A check of the same name replaces the first.
  server->AddReadyCheck("informers", [] { return std::string(); });
  EXPECT_EQ(Get(server->port(), "/readyz").status, 200);
}

TEST(OpsServerTest, AThrowingCheckFailsWithItsMessage) {
  auto server = StartLocal();
  ASSERT_NE(server, nullptr);
  server->AddReadyCheck("store", []() -> std::string { throw std::runtime_error("disk gone"); });
  Reply r = Get(server->port(), "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "[-]store failed: check threw: disk gone\nreadyz check failed\n");
}

TEST(OpsServerTest, UnknownPathsAndMethods) {
  auto server = StartLocal();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(server->port(), "/").status, 404);
  EXPECT_EQ(Get(server->port(), "/readyz/nosuch").status, 404);
  EXPECT_EQ(Get(server->port(), "/metricsx").status, 404);
  Reply r = Get(server->port(), "/healthz", "POST");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET");
}

// --- metrics -----------------------------------------------------------------------------------

// Checks Prometheus' text format 0.0.4 line by line (the exposition format's grammar): HELP and
// TYPE lines, samples `name{label="value",...} value [timestamp]` of a declared family, label
// values escaped, histograms with cumulative `le` buckets ending at +Inf equal to _count.
// Returns what is wrong, "" when nothing.
std::string StrictTextFormatProblems(const std::string& text) {
  static const std::regex kHelp(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*))");
  static const std::regex kType(
      R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? )"
      R"(([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf)|NaN)( -?[0-9]+)?)");
  static const std::regex kLabel(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)\")");
  if (text.empty() || text.back() != '\n') return "the text does not end with a newline";
  std::map<std::string, std::string> types;
  // histogram series (name + labels but le) -> (last bucket count, +Inf count)
  std::map<std::string, std::pair<double, double>> buckets;
  std::map<std::string, double> counts;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      if (!std::regex_match(line, m, kHelp)) return fmt::format("line {}: bad HELP: {}", n, line);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      if (!std::regex_match(line, m, kType)) return fmt::format("line {}: bad TYPE: {}", n, line);
      if (types.count(m[1])) return fmt::format("line {}: second TYPE for {}", n, m[1].str());
      types[m[1]] = m[2];
      continue;
    }
    if (line.empty() || line[0] == '#') return fmt::format("line {}: stray line: {}", n, line);
    if (!std::regex_match(line, m, kSample)) return fmt::format("line {}: bad sample: {}", n, line);
    std::string name = m[1];
    std::string family = name;
    std::string type;
    for (const char* suffix : {"_bucket", "_sum", "_count", ""}) {
      std::string s = suffix;
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        std::string base = name.substr(0, name.size() - s.size());
        if (auto t = types.find(base);
            t != types.end() && (s.empty() || t->second == "histogram" || t->second == "summary")) {
          family = base;
          type = t->second;
          break;
        }
      }
      if (s.empty() && types.count(name)) type = types[name];
    }
    if (type.empty()) return fmt::format("line {}: sample of no declared family: {}", n, line);
    std::string labels_but_le, le;
    std::string labels = m[3];
    std::set<std::string> seen;
    for (std::sregex_iterator it(labels.begin(), labels.end(), kLabel), end; it != end; ++it) {
      if (!seen.insert((*it)[1]).second) return fmt::format("line {}: label twice", n);
      if ((*it)[1] == "le") {
        le = (*it)[2];
      } else {
        labels_but_le += it->str() + ",";
      }
    }
    const double value =
        m[4] == "+Inf" || m[4] == "Inf"
            ? INFINITY
            : (m[4] == "-Inf" ? -INFINITY : std::strtod(m[4].str().c_str(), nullptr));
    if (type == "histogram") {
      const std::string series = family + "{" + labels_but_le + "}";
      if (name == family + "_bucket") {
        if (le.empty()) return fmt::format("line {}: bucket without le", n);
        auto& [last, inf] = buckets[series];
        if (value < last) return fmt::format("line {}: buckets not cumulative", n);
        last = value;
        if (le == "+Inf") inf = value;
      } else if (name == family + "_count") {
        counts[series] = value;
      } else if (name != family + "_sum") {
        return fmt::format("line {}: {} in histogram {}", n, name, family);
      }
    }
    if (type == "counter" && value < 0) return fmt::format("line {}: negative counter", n);
  }
  for (const auto& [series, b] : buckets) {
    auto c = counts.find(series);
    if (c == counts.end()) return series + " has no _count";
    if (b.second != c->second) return series + ": +Inf bucket differs from _count";
  }
  return "";
}

// What Prometheus' Python client library makes of `text`: one line per sample,
// `type name {"label": "value", ...} value` (labels sorted, as JSON; `le` as Python writes the
// number), or the parser's error.
std::string ParseWithPrometheusClient(const std::string& text) {
  static constexpr std::string_view kScript = R"(import json, sys
from prometheus_client.parser import text_string_to_metric_families
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in family.samples:
        if "le" in s.labels:  # the bound as a number, however the text spelled it
            s.labels["le"] = repr(float(s.labels["le"]))
        print(family.type, s.name, json.dumps(dict(sorted(s.labels.items()))), repr(s.value))
)";
  const auto dir = std::filesystem::temp_directory_path();
  const std::string base = (dir / fmt::format("ops_server_test_{}", ::getpid())).string();
  std::ofstream(base + ".py") << kScript;
  std::ofstream(base + ".txt") << text;
  // Debian's interpreter, where python3-prometheus-client installs (not a pyenv's on PATH).
  const std::string cmd = fmt::format("/usr/bin/python3 {0}.py {0}.txt > {0}.out 2>&1", base);
  const int rc = std::system(cmd.c_str());
  std::stringstream result;
  result << std::ifstream(base + ".out").rdbuf();
  for (const char* ext : {".py", ".txt", ".out"}) std::filesystem::remove(base + ext);
  if (rc != 0) return "python parser failed (scripts/install-deps installs it): " + result.str();
  return result.str();
}

TEST(OpsServerTest, MetricsServeTheRegistryAfterTheCollectHooks) {
  auto registry = std::make_shared<prometheus::Registry>();
  OpsServerOptions options;
  options.registry = registry;
  auto server = StartLocal(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->registry(), registry);

  auto& counter = prometheus::BuildCounter()
                      .Name("test_requests_total")
                      .Help("Requests, by code.")
                      .Register(*registry);
  counter.Add({{"code", "200"}}).Increment(3);
  counter.Add({{"code", "a \"quoted\\\" value\nwith a newline"}}).Increment();
  auto& hist = prometheus::BuildHistogram()
                   .Name("test_latency_milliseconds")
                   .Help("Latency in milliseconds.")
                   .Register(*registry);
  auto& h = hist.Add({{"action", "allocate"}}, prometheus::Histogram::BucketBoundaries{1, 10, 100});
  h.Observe(0.5);
  h.Observe(20);
  h.Observe(2000);
  auto& scrapes = prometheus::BuildGauge()
                      .Name("test_scrapes")
                      .Help("Collect hook calls.")
                      .Register(*registry)
                      .Add({});
  std::atomic<int> calls{0};
  server->AddCollectHook([&] { scrapes.Set(++calls); });

  Reply r = Get(server->port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(StrictTextFormatProblems(r.body), "") << r.body;
  EXPECT_THAT(r.body, HasSubstr("# TYPE test_requests_total counter\n"));
  EXPECT_THAT(r.body, HasSubstr("test_requests_total{code=\"200\"} 3\n"));
  EXPECT_THAT(r.body, HasSubstr("test_scrapes 1\n")) << "the hook ran before serialising";
  EXPECT_THAT(r.body,
              HasSubstr("test_latency_milliseconds_bucket{action=\"allocate\",le=\"10\"} 1\n"));

  const std::string parsed = ParseWithPrometheusClient(r.body);
  EXPECT_THAT(parsed, HasSubstr(R"(counter test_requests_total {"code": "200"} 3.0)"));
  EXPECT_THAT(
      parsed,
      HasSubstr(
          R"(counter test_requests_total {"code": "a \"quoted\\\" value\nwith a newline"} 1.0)"));
  EXPECT_THAT(parsed, HasSubstr(R"(gauge test_scrapes {} 1.0)"));
  const std::string bucket =
      R"(histogram test_latency_milliseconds_bucket {"action": "allocate", )";
  EXPECT_THAT(parsed, HasSubstr(bucket + R"("le": "1.0"} 1.0)"));
  EXPECT_THAT(parsed, HasSubstr(bucket + R"("le": "10.0"} 1.0)"));
  EXPECT_THAT(parsed, HasSubstr(bucket + R"("le": "100.0"} 2.0)"));
  EXPECT_THAT(parsed, HasSubstr(bucket + R"("le": "inf"} 3.0)"));
  EXPECT_THAT(parsed,
              HasSubstr(R"(histogram test_latency_milliseconds_count {"action": "allocate"} 3.0)"));
  EXPECT_THAT(
      parsed,
      HasSubstr(R"(histogram test_latency_milliseconds_sum {"action": "allocate"} 2020.5)"));

  EXPECT_THAT(Get(server->port(), "/metrics").body, HasSubstr("test_scrapes 2\n"));
}

TEST(OpsServerTest, StrictTextCheckCatchesMalformedText) {
  // The line check must be able to fail, or the test above proves nothing.
  EXPECT_NE(StrictTextFormatProblems("x 1\n"), "");  // no TYPE
  EXPECT_NE(StrictTextFormatProblems("# TYPE x gauge\nx{a=\"b} 1\n"), "");
  EXPECT_NE(StrictTextFormatProblems("# TYPE x gauge\nx one\n"), "");
  EXPECT_NE(StrictTextFormatProblems("# TYPE x counter\nx -1\n"), "");
  EXPECT_NE(StrictTextFormatProblems("# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                                     "h_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 0\n"),
            "");
  EXPECT_NE(StrictTextFormatProblems("# TYPE x gauge\nx 1"), "");
  EXPECT_EQ(StrictTextFormatProblems("# HELP x X.\n# TYPE x gauge\nx{a=\"q\\\"\"} 1.5\n"), "");
}

TEST(OpsServerTest, AServerMakesItsOwnRegistryWhenGivenNone) {
  auto server = StartLocal();
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->registry(), nullptr);
  prometheus::BuildGauge()
      .Name("own_gauge")
      .Help("A gauge.")
      .Register(*server->registry())
      .Add({})
      .Set(7);
  Reply r = Get(server->port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("own_gauge 7\n"));
}

}  // namespace
}  // namespace muster::ops
