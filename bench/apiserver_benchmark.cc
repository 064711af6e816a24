// API server benchmarks: a real `muster apiserver` process (127.0.0.1, port 0, a temporary data
// directory, the store's default durability: SQLite WAL, synchronous=NORMAL) driven over real
// HTTP/1.1 keep-alive connections from this process. A plain driver that prints its figures,
// because two of them (RSS, watch delivery) are about processes and sockets, not a loop body.
//
//   create   pod creates/s with 1, 4 and 16 concurrent keep-alive connections, each connection
//            on its own thread issuing POSTs back to back (target >= 5,000/s on 2 cores)
//   list     GET of 10,000 pods, as JSON and as a meta.k8s.io Table (what `kubectl get` asks for)
//   watch    1,000 concurrent pod watches (one epoll thread here), then K creates: events/s
//            delivered and the time until the last watcher has the last event
//   memory   the server's VmRSS / VmHWM with 50,000 pods stored, and after a restart that loads
//            them from the data directory (target <= 500 MiB)
//   fanout   (not run by default) 10,000 concurrent pod watches on a server started under
//            RLIMIT_NPROC 1,000 (`ulimit -u`; as user nobody when run as root) with
//            --max-watches=10000; the 10,001st gets 429; then 1,000 creates at 100/s: every
//            watcher must get every event in order; event latency p50/p99, server threads, RSS
//
// Every phase starts its own server on a fresh data directory. The server's CPU time (utime +
// stime from /proc/PID/stat) is printed next to wall-clock figures: on a shared 2-core machine
// the client and other processes take CPU from the server, and its CPU time says what it cost.
//
// Usage: apiserver_benchmark [--only=create,list,watch,memory,fanout] [--creates=N]
//        [--list-pods=N] [--watchers=N] [--watch-writes=N] [--memory-pods=N]
//        [--fanout-watchers=N] [--fanout-writes=N] [--fanout-rate=N] [--fanout-threads=N]
//        [--muster=PATH]

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "fmt/format.h"
#include "tests/e2e/e2e_support.h"

namespace muster::bench {
namespace {

using Clock = std::chrono::steady_clock;
using e2e::HttpResult;
using e2e::ServerProcess;
using e2e::TempDir;
using e2e::TestHttpClient;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr char kTableAccept[] =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
    "g=meta.k8s.io,application/json";
constexpr char kPodsPath[] = "/api/v1/namespaces/default/pods";

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const auto index =
      static_cast<size_t>(std::lround(p / 100.0 * static_cast<double>(samples.size() - 1)));
  return samples[std::min(index, samples.size() - 1)];
}

// --- The server process --------------------------------------------------------------------------

struct ProcessStats {
  double rss_mib = 0;
  double hwm_mib = 0;
  int threads = 0;
};

ProcessStats ReadProcessStats(pid_t pid) {
  ProcessStats stats;
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    auto kib = [&line]() { return std::atof(line.c_str() + line.find(':') + 1) / 1024.0; };
    if (line.rfind("VmRSS:", 0) == 0) stats.rss_mib = kib();
    if (line.rfind("VmHWM:", 0) == 0) stats.hwm_mib = kib();
    if (line.rfind("Threads:", 0) == 0) stats.threads = std::atoi(line.c_str() + 8);
  }
  return stats;
}

// utime + stime of the process, in seconds.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoull(field);
    if (i == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A started server and its data directory (removed afterwards).
struct RunningServer {
  std::unique_ptr<TempDir> dir;
  std::optional<ServerProcess> process;
};

RunningServer StartServer(const std::string& muster) {
  RunningServer s;
  s.dir = std::make_unique<TempDir>();
  s.process = ServerProcess::Start(muster, s.dir->path() + "/data");
  if (!s.process) {
    std::fprintf(stderr, "cannot start %s apiserver\n", muster.c_str());
    std::exit(1);
  }
  return s;
}

// --- Workload ------------------------------------------------------------------------------------

// A pod as a training job's worker is submitted: labels, one container with requests and limits.
// The server's defaulting roughly doubles it as stored.
std::string PodJson(std::string_view prefix, int index) {
  return fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}-{}","namespace":"default",)"
      R"("labels":{{"app":"bench","shard":"s{}"}}}},"spec":{{"schedulerName":"volcano",)"
      R"("containers":[{{"name":"main","image":"registry.example.com/train:1.0",)"
      R"("command":["python","train.py"],"resources":{{"requests":{{"cpu":"100m",)"
      R"("memory":"500Mi"}},"limits":{{"cpu":"100m","memory":"500Mi"}}}}}}]}}}})",
      prefix, index, index % 16);
}

struct CreateResult {
  double seconds = 0;
  double server_cpu_seconds = 0;
  std::vector<double> latencies_ms;
  int failures = 0;
};

// Creates pods prefix-0 .. prefix-(count-1) over `connections` keep-alive connections, one thread
// each, requests back to back.
CreateResult CreatePods(const ServerProcess& server, std::string_view prefix, int count,
                        int connections) {
  std::vector<std::vector<double>> latencies(connections);
  std::atomic<int> failures{0};
  std::atomic<int> next{0};
  const double cpu_before = ProcessCpuSeconds(server.pid());
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(connections));
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c]() {
      TestHttpClient conn(server.port());
      latencies[c].reserve(static_cast<size_t>(count) / static_cast<size_t>(connections) + 1);
      for (int i; (i = next.fetch_add(1)) < count;) {
        std::string body = PodJson(prefix, i);
        Clock::time_point t0 = Clock::now();
        std::optional<HttpResult> r = conn.Send("POST", kPodsPath, body);
        latencies[c].push_back(Millis(Clock::now() - t0));
        if (!r || r->status != 201) {
          if (failures.fetch_add(1) < 3) {
            std::fprintf(stderr, "create %s-%d: %d %s\n", std::string(prefix).c_str(), i,
                         r ? r->status : -1, r ? r->body.substr(0, 300).c_str() : "");
          }
          if (!r) return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CreateResult result;
  result.seconds = Seconds(Clock::now() - start);
  result.server_cpu_seconds = ProcessCpuSeconds(server.pid()) - cpu_before;
  for (auto& l : latencies)
    result.latencies_ms.insert(result.latencies_ms.end(), l.begin(), l.end());
  result.failures = failures.load();
  return result;
}

struct Flags {
  std::string only = "create,list,watch,memory";
  int creates = 20000;
  int list_pods = 10000;
  int watchers = 1000;
  int watch_writes = 1000;
  int memory_pods = 50000;
  int fanout_watchers = 10000;
  int fanout_writes = 1000;
  int fanout_rate = 100;      // creates per second
  int fanout_threads = 1000;  // the server's RLIMIT_NPROC
  std::string muster = MUSTER_BINARY_PATH;
  [[nodiscard]] bool Runs(std::string_view phase) const {
    return only.find(phase) != std::string::npos;
  }
};

void RunCreate(const Flags& flags) {
  std::printf("\n== create: %d pod creates per run over N keep-alive connections\n", flags.creates);
  std::printf("%-12s %10s %10s %10s %10s %14s %8s\n", "connections", "creates/s", "p50 ms",
              "p99 ms", "max ms", "server cpu-s", "errors");
  for (int connections : {1, 4, 16}) {
    RunningServer server = StartServer(flags.muster);
    CreatePods(*server.process, "warm", 500, connections);  // first-touch costs, not measured
    CreateResult r = CreatePods(*server.process, "pod", flags.creates, connections);
    const double rate = flags.creates / r.seconds;
    std::printf("%-12d %10.0f %10.2f %10.2f %10.2f %14.2f %8d\n", connections, rate,
                Percentile(r.latencies_ms, 50), Percentile(r.latencies_ms, 99),
                Percentile(r.latencies_ms, 100), r.server_cpu_seconds, r.failures);
    std::printf("%-12s %10.0f creates per server CPU-second\n", "",
                flags.creates / std::max(r.server_cpu_seconds, 1e-9));
  }
  std::printf("target: >= 5,000 creates/s\n");
}

void RunList(const Flags& flags) {
  constexpr int kRepetitions = 20;
  std::printf("\n== list: %d pods, %d GETs of each form on one keep-alive connection\n",
              flags.list_pods, kRepetitions);
  RunningServer server = StartServer(flags.muster);
  CreatePods(*server.process, "pod", flags.list_pods, 16);
  TestHttpClient conn(server.process->port());
  std::printf("%-26s %10s %10s %10s %12s %14s\n", "form", "p50 ms", "p99 ms", "min ms", "bytes",
              "server cpu ms");
  struct Form {
    const char* name;
    std::string target;
    const char* accept;
  };
  const std::array<Form, 4> forms = {{
      {"JSON (PodList)", kPodsPath, "application/json"},
      {"Table (kubectl get)", kPodsPath, kTableAccept},
      {"JSON, all namespaces", "/api/v1/pods", "application/json"},
      {"JSON, labelSelector 1/16", std::string(kPodsPath) + "?labelSelector=shard%3Ds3",
       "application/json"},
  }};
  for (const Form& form : forms) {
    std::vector<double> ms;
    size_t bytes = 0;
    const double cpu_before = ProcessCpuSeconds(server.process->pid());
    for (int i = 0; i < kRepetitions; ++i) {
      Clock::time_point t0 = Clock::now();
      std::optional<HttpResult> r =
          conn.Send("GET", form.target, "", "application/json", form.accept);
      ms.push_back(Millis(Clock::now() - t0));
      if (!r || r->status != 200) {
        std::fprintf(stderr, "list %s failed: %d\n", form.name, r ? r->status : -1);
        std::exit(1);
      }
      bytes = r->body.size();
    }
    const double cpu_ms =
        (ProcessCpuSeconds(server.process->pid()) - cpu_before) * 1000.0 / kRepetitions;
    std::printf("%-26s %10.1f %10.1f %10.1f %12zu %14.1f\n", form.name, Percentile(ms, 50),
                Percentile(ms, 99), Percentile(ms, 0), bytes, cpu_ms);
  }
}

// --- Watch fan-out -------------------------------------------------------------------------------

// --- Watches read on one epoll thread ----------------------------------------------------------

// A watch read line by line: each event's resourceVersion must be above the one before (the
// order), and a sampled watcher keeps when each arrived.
struct WatchReader {
  int fd = -1;
  std::string raw;  // received, not yet consumed
  std::string line;
  bool head_done = false;
  int status = 0;
  size_t chunk_left = 0;
  bool in_chunk_data = false;
  int events = 0;
  int64_t last_rv = 0;
  bool out_of_order = false;
  bool ended = false;  // the last chunk or the connection's end
  bool sampled = false;
  std::vector<std::pair<int64_t, Clock::time_point>> arrivals;  // sampled: rv, when
  int want = 0;                  // events expected
  Clock::time_point done_at{};  // when the want-th arrived

  void OnLine(Clock::time_point now) {
    static constexpr std::string_view kKey = R"("resourceVersion":")";
    size_t at = line.find(kKey);
    if (at == std::string::npos) return;
    const int64_t rv = std::atoll(line.c_str() + at + kKey.size());
    if (rv <= last_rv) out_of_order = true;
    last_rv = rv;
    ++events;
    if (sampled) arrivals.emplace_back(rv, now);
    if (events == want) done_at = now;
  }

  void Parse(Clock::time_point now) {
    size_t pos = 0;
    if (!head_done) {
      size_t end = raw.find("\r\n\r\n");
      if (end == std::string::npos) return;
      status = std::atoi(raw.c_str() + 9);
      head_done = true;
      pos = end + 4;
    }
    while (pos < raw.size()) {
      if (in_chunk_data) {
        size_t take = std::min(chunk_left, raw.size() - pos);
        const char* data = raw.data() + pos;
        for (size_t i = 0; i < take;) {
          const void* nl = std::memchr(data + i, '\n', take - i);
          size_t upto = nl == nullptr ? take : static_cast<size_t>(static_cast<const char*>(nl) - data);
          line.append(data + i, upto - i);
          if (nl == nullptr) break;
          OnLine(now);
          line.clear();
          i = upto + 1;
        }
        pos += take;
        chunk_left -= take;
        if (chunk_left > 0) break;
        in_chunk_data = false;
        chunk_left = 2;
      }
      if (chunk_left > 0) {
        size_t take = std::min(chunk_left, raw.size() - pos);
        pos += take;
        chunk_left -= take;
        continue;
      }
      size_t eol = raw.find("\r\n", pos);
      if (eol == std::string::npos) break;
      size_t size = std::strtoul(raw.c_str() + pos, nullptr, 16);
      pos = eol + 2;
      if (size == 0) {
        ended = true;
        break;
      }
      in_chunk_data = true;
      chunk_left = size;
    }
    raw.erase(0, pos);
  }
};


// Connects one watch per reader (each sends `request`) and registers it with a new epoll
// instance, which it returns; exits when a connection fails.
int OpenWatches(uint16_t port, const std::string& request, std::vector<WatchReader>& readers) {
  int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  for (size_t i = 0; i < readers.size(); ++i) {
    WatchReader& w = readers[i];
    w.fd = e2e::ConnectLoopback(port);
    if (w.fd < 0 || ::send(w.fd, request.data(), request.size(), MSG_NOSIGNAL) !=
                        static_cast<ssize_t>(request.size())) {
      std::fprintf(stderr, "watcher %zu: cannot connect (%s)\n", i, std::strerror(errno));
      std::exit(1);
    }
    ::fcntl(w.fd, F_SETFL, ::fcntl(w.fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    ::epoll_ctl(epoll, EPOLL_CTL_ADD, w.fd, &ev);
  }
  return epoll;
}

// Reads every watch on one thread until `reading` goes false, counting response heads and
// delivered events.
struct WatchReading {
  std::atomic<bool> reading{true};
  std::atomic<int> heads{0};
  std::atomic<int64_t> delivered{0};
  std::thread thread;

  WatchReading(int epoll, std::vector<WatchReader>& readers) {
    thread = std::thread([this, epoll, &readers]() {
      std::vector<epoll_event> ready(512);
      std::array<char, 1 << 16> buf;
      while (reading) {
        int count = ::epoll_wait(epoll, ready.data(), static_cast<int>(ready.size()), 100);
        const Clock::time_point now = Clock::now();
        for (int e = 0; e < count; ++e) {
          WatchReader& w = readers[ready[static_cast<size_t>(e)].data.u32];
          while (true) {
            ssize_t got = ::recv(w.fd, buf.data(), buf.size(), 0);
            if (got <= 0) {
              if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                w.ended = true;
                ::epoll_ctl(epoll, EPOLL_CTL_DEL, w.fd, nullptr);
              }
              break;
            }
            const bool had_head = w.head_done;
            const int before = w.events;
            w.raw.append(buf.data(), static_cast<size_t>(got));
            w.Parse(now);
            if (!had_head && w.head_done) heads.fetch_add(1);
            delivered.fetch_add(w.events - before);
          }
        }
      }
    });
  }
  void Stop() {
    reading = false;
    thread.join();
  }
  // Waits up to `limit` for every one of `n` heads.
  void WaitForHeads(int n, std::chrono::seconds limit) {
    const Clock::time_point start = Clock::now();
    while (heads.load() < n && Clock::now() - start < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

void RaiseFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// A watch of the pods from the current list's resourceVersion, as a raw request.
std::string WatchRequest(TestHttpClient& client) {
  std::optional<HttpResult> list = client.Send("GET", kPodsPath);
  if (!list || list->status != 200) {
    std::fprintf(stderr, "initial list failed\n");
    std::exit(1);
  }
  const std::string rv =
      std::string(boost::json::parse(list->body).at("metadata").at("resourceVersion").as_string());
  return fmt::format(
      "GET {}?watch=true&resourceVersion={}&timeoutSeconds=900 HTTP/1.1\r\nHost: "
      "127.0.0.1\r\nAccept: application/json\r\n\r\n",
      kPodsPath, rv);
}

void RunWatch(const Flags& flags) {
  const int n = flags.watchers;
  const int k = flags.watch_writes;
  std::printf("\n== watch: %d concurrent pod watches, then %d creates on one connection\n", n, k);
  RunningServer server = StartServer(flags.muster);
  const uint16_t port = server.process->port();
  TestHttpClient writer(port);
  const std::string request = WatchRequest(writer);

  std::vector<WatchReader> watchers(static_cast<size_t>(n));
  for (WatchReader& w : watchers) w.want = k;
  const Clock::time_point connect_start = Clock::now();
  int epoll = OpenWatches(port, request, watchers);
  WatchReading reading(epoll, watchers);
  reading.WaitForHeads(n, std::chrono::seconds(60));
  const double setup_s = Seconds(Clock::now() - connect_start);
  const ProcessStats idle = ReadProcessStats(server.process->pid());
  std::printf("watches established: %d of %d in %.2f s (server: %d threads, RSS %.0f MiB)\n",
              reading.heads.load(), n, setup_s, idle.threads, idle.rss_mib);

  const double cpu_before = ProcessCpuSeconds(server.process->pid());
  const Clock::time_point write_start = Clock::now();
  for (int i = 0; i < k; ++i) {
    std::optional<HttpResult> r = writer.Send("POST", kPodsPath, PodJson("watched", i));
    if (!r || r->status != 201) {
      std::fprintf(stderr, "watched create %d failed\n", i);
      std::exit(1);
    }
  }
  const Clock::time_point writes_done = Clock::now();
  const int64_t want = static_cast<int64_t>(n) * k;
  while (reading.delivered.load() < want &&
         Clock::now() - writes_done < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double server_cpu = ProcessCpuSeconds(server.process->pid()) - cpu_before;
  reading.Stop();

  Clock::time_point last{};
  int complete = 0, broken = 0;
  std::vector<double> done_ms;
  for (const WatchReader& w : watchers) {
    if (w.ended) ++broken;
    if (w.done_at != Clock::time_point{}) {
      ++complete;
      last = std::max(last, w.done_at);
      done_ms.push_back(Millis(w.done_at - writes_done));
    }
  }
  const int64_t delivered = reading.delivered.load();
  const ProcessStats after = ReadProcessStats(server.process->pid());
  const double span = Seconds((complete == n ? last : Clock::now()) - write_start);
  std::printf("writes: %d creates in %.2f s (%.0f/s while fanning out)\n", k,
              Seconds(writes_done - write_start), k / Seconds(writes_done - write_start));
  std::printf("watchers with every event: %d of %d (broken streams: %d)\n", complete, n, broken);
  std::printf("events delivered: %lld in %.2f s = %.0f events/s\n",
              static_cast<long long>(delivered), span, static_cast<double>(delivered) / span);
  std::printf("last watcher had the last event %.1f ms after the last write was acknowledged\n",
              complete == n ? Millis(last - writes_done) : -1.0);
  std::printf("  (per watcher, from the last write's ack: p50 %.1f ms, p99 %.1f ms)\n",
              Percentile(done_ms, 50), Percentile(done_ms, 99));
  std::printf("server CPU during the writes and delivery: %.2f s; RSS %.0f MiB, peak %.0f MiB\n",
              server_cpu, after.rss_mib, after.hwm_mib);
  for (WatchReader& w : watchers) ::close(w.fd);
  ::close(epoll);
}

// The muster command line run under RLIMIT_NPROC = `threads`: as root, as user nobody (a limit
// on root's threads is not enforced), through a wrapper script in `dir`.
std::string LimitedMuster(const std::string& muster, const std::string& dir, int threads) {
  const std::string script = dir + "/muster-limited";
  std::ofstream out(script);
  if (::geteuid() == 0) {
    out << fmt::format(
        "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "
        "prlimit --nproc={} -- {} \"$@\"\n",
        threads, muster);
  } else {
    out << fmt::format("#!/bin/sh\nexec prlimit --nproc={} -- {} \"$@\"\n", threads, muster);
  }
  out.close();
  std::filesystem::permissions(script, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_read |
                                           std::filesystem::perms::group_exec |
                                           std::filesystem::perms::others_read |
                                           std::filesystem::perms::others_exec);
  std::filesystem::permissions(dir, std::filesystem::perms::all);  // nobody writes the data dir
  return script;
}

void RunFanout(const Flags& flags) {
  const int n = flags.fanout_watchers;
  const int k = flags.fanout_writes;
  std::printf(
      "\n== fanout: %d concurrent pod watches on a server limited to %d threads "
      "(RLIMIT_NPROC) and --max-watches=%d, then %d creates at %d/s\n",
      n, flags.fanout_threads, n, k, flags.fanout_rate);
  TempDir dir;
  const std::string muster = LimitedMuster(flags.muster, dir.path(), flags.fanout_threads);
  std::optional<ServerProcess> server = ServerProcess::Start(
      muster, dir.path() + "/data", {"--max-watches", std::to_string(n)});
  if (!server) {
    std::fprintf(stderr, "cannot start %s apiserver\n", muster.c_str());
    std::exit(1);
  }
  const uint16_t port = server->port();
  TestHttpClient writer(port);
  const std::string request = WatchRequest(writer);
  std::vector<WatchReader> watchers(static_cast<size_t>(n));
  for (size_t i = 0; i < watchers.size(); ++i) {
    watchers[i].sampled = i % 10 == 0;
    watchers[i].want = k;
  }
  const Clock::time_point connect_start = Clock::now();
  int epoll = OpenWatches(port, request, watchers);
  WatchReading reading(epoll, watchers);
  reading.WaitForHeads(n, std::chrono::seconds(120));
  const double setup_s = Seconds(Clock::now() - connect_start);
  const ProcessStats idle = ReadProcessStats(server->pid());
  std::printf("watches established: %d of %d in %.2f s (server: %d threads, RSS %.0f MiB)\n",
              reading.heads.load(), n, setup_s, idle.threads, idle.rss_mib);

  // One more than the limit: 429 with Retry-After, and the server goes on.
  int extra_status = 0;
  bool extra_retry_after = false;
  {
    int fd = e2e::ConnectLoopback(port);
    std::string head;
    if (fd >= 0 && ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) > 0) {
      timeval tv{10, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char b[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t got = ::recv(fd, b, sizeof b, 0);
        if (got <= 0) break;
        head.append(b, static_cast<size_t>(got));
      }
    }
    if (head.size() > 12) extra_status = std::atoi(head.c_str() + 9);
    extra_retry_after = head.find("Retry-After: 1\r\n") != std::string::npos;
    if (fd >= 0) ::close(fd);
  }
  std::printf("watcher %d: HTTP %d%s\n", n + 1, extra_status,
              extra_retry_after ? " with Retry-After: 1" : " (no Retry-After)");

  // Paced creates; each one's send time, by the resourceVersion the server gave it.
  std::vector<std::pair<int64_t, Clock::time_point>> sent;
  sent.reserve(static_cast<size_t>(k));
  const double cpu_before = ProcessCpuSeconds(server->pid());
  const Clock::time_point write_start = Clock::now();
  const auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(1.0 / flags.fanout_rate));
  for (int i = 0; i < k; ++i) {
    std::this_thread::sleep_until(write_start + i * period);
    const Clock::time_point t0 = Clock::now();
    std::optional<HttpResult> r = writer.Send("POST", kPodsPath, PodJson("fanout", i));
    if (!r || r->status != 201) {
      std::fprintf(stderr, "fanout create %d failed\n", i);
      std::exit(1);
    }
    const int64_t created_rv = std::atoll(std::string(boost::json::parse(r->body)
                                                          .at("metadata")
                                                          .at("resourceVersion")
                                                          .as_string())
                                              .c_str());
    sent.emplace_back(created_rv, t0);
  }
  const Clock::time_point writes_done = Clock::now();
  const int64_t want = static_cast<int64_t>(n) * k;
  while (reading.delivered.load() < want &&
         Clock::now() - writes_done < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const Clock::time_point delivered_at = Clock::now();
  const double server_cpu = ProcessCpuSeconds(server->pid()) - cpu_before;
  const ProcessStats after = ReadProcessStats(server->pid());
  reading.Stop();

  std::sort(sent.begin(), sent.end());
  int complete = 0, disordered = 0, ended = 0;
  std::vector<double> latency_ms;
  for (const WatchReader& w : watchers) {
    if (w.events == k && !w.out_of_order) ++complete;
    if (w.out_of_order) ++disordered;
    if (w.ended) ++ended;
    for (const auto& [event_rv, at] : w.arrivals) {
      auto it = std::lower_bound(sent.begin(), sent.end(),
                                 std::pair<int64_t, Clock::time_point>(event_rv, {}));
      if (it != sent.end() && it->first == event_rv) latency_ms.push_back(Millis(at - it->second));
    }
  }
  std::printf("writes: %d creates in %.2f s\n", k, Seconds(writes_done - write_start));
  std::printf("watchers with every event in order: %d of %d (out of order: %d, ended early: %d)\n",
              complete, n, disordered, ended);
  std::printf("events delivered: %lld of %lld; the last %.1f ms after the last write\n",
              static_cast<long long>(reading.delivered.load()), static_cast<long long>(want),
              Millis(delivered_at - writes_done));
  std::printf(
      "event latency, write sent to event received (%zu samples, every 10th watcher): p50 %.1f "
      "ms, p99 %.1f ms, max %.1f ms\n",
      latency_ms.size(), Percentile(latency_ms, 50), Percentile(latency_ms, 99),
      Percentile(latency_ms, 100));
  std::printf("server: %d threads; RSS %.0f MiB, peak %.0f MiB; CPU during writes and delivery %.2f s\n",
              after.threads, after.rss_mib, after.hwm_mib, server_cpu);
  for (WatchReader& w : watchers) ::close(w.fd);
  ::close(epoll);
}

void RunMemory(const Flags& flags) {
  std::printf("\n== memory: server RSS with %d pods stored\n", flags.memory_pods);
  RunningServer server = StartServer(flags.muster);
  const ProcessStats empty = ReadProcessStats(server.process->pid());
  CreateResult r = CreatePods(*server.process, "pod", flags.memory_pods, 16);
  const ProcessStats filled = ReadProcessStats(server.process->pid());
  std::printf("empty server:            VmRSS %7.1f MiB\n", empty.rss_mib);
  std::printf(
      "after %d creates:     VmRSS %7.1f MiB  VmHWM %7.1f MiB  (%.0f creates/s, "
      "%d errors)\n",
      flags.memory_pods, filled.rss_mib, filled.hwm_mib, flags.memory_pods / r.seconds, r.failures);
  {
    TestHttpClient conn(server.process->port());
    Clock::time_point t0 = Clock::now();
    std::optional<HttpResult> list = conn.Send("GET", kPodsPath);
    const double ms = Millis(Clock::now() - t0);
    const ProcessStats listed = ReadProcessStats(server.process->pid());
    std::printf(
        "after a list of all:     VmRSS %7.1f MiB  VmHWM %7.1f MiB  (list %.0f ms, %.1f "
        "MiB)\n",
        listed.rss_mib, listed.hwm_mib, ms,
        list ? static_cast<double>(list->body.size()) / kMiB : 0.0);
  }
  server.process->Kill(SIGTERM);
  auto du = [&]() {
    uintmax_t total = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(server.dir->path(), ec)) {
      if (e.is_regular_file(ec)) total += e.file_size(ec);
    }
    return static_cast<double>(total) / kMiB;
  };
  const double disk = du();
  const Clock::time_point restart = Clock::now();
  server.process = ServerProcess::Start(flags.muster, server.dir->path() + "/data");
  if (!server.process) {
    std::fprintf(stderr, "restart failed\n");
    std::exit(1);
  }
  const double load_s = Seconds(Clock::now() - restart);
  const ProcessStats reloaded = ReadProcessStats(server.process->pid());
  std::printf(
      "restarted on the data dir: VmRSS %7.1f MiB  VmHWM %7.1f MiB  (ready in %.2f s; "
      "data dir %.0f MiB)\n",
      reloaded.rss_mib, reloaded.hwm_mib, load_s, disk);
  TestHttpClient conn(server.process->port());
  std::optional<HttpResult> list = conn.Send("GET", kPodsPath);
  size_t items = 0;
  if (list && list->status == 200)
    items = boost::json::parse(list->body).at("items").as_array().size();
  const ProcessStats relisted = ReadProcessStats(server.process->pid());
  std::printf("restarted, after a list: VmRSS %7.1f MiB  VmHWM %7.1f MiB  (%zu pods listed)\n",
              relisted.rss_mib, relisted.hwm_mib, items);
  std::printf("target: <= 500 MiB\n");
}

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&arg](std::string_view name) -> std::optional<std::string> {
      if (arg.substr(0, name.size()) != name) return std::nullopt;
      return std::string(arg.substr(name.size()));
    };
    if (auto v = value("--only=")) {
      flags.only = *v;
    } else if (auto v = value("--creates=")) {
      flags.creates = std::atoi(v->c_str());
    } else if (auto v = value("--list-pods=")) {
      flags.list_pods = std::atoi(v->c_str());
    } else if (auto v = value("--watchers=")) {
      flags.watchers = std::atoi(v->c_str());
    } else if (auto v = value("--watch-writes=")) {
      flags.watch_writes = std::atoi(v->c_str());
    } else if (auto v = value("--memory-pods=")) {
      flags.memory_pods = std::atoi(v->c_str());
    } else if (auto v = value("--fanout-watchers=")) {
      flags.fanout_watchers = std::atoi(v->c_str());
    } else if (auto v = value("--fanout-writes=")) {
      flags.fanout_writes = std::atoi(v->c_str());
    } else if (auto v = value("--fanout-rate=")) {
      flags.fanout_rate = std::atoi(v->c_str());
    } else if (auto v = value("--fanout-threads=")) {
      flags.fanout_threads = std::atoi(v->c_str());
    } else if (auto v = value("--muster=")) {
      flags.muster = *v;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--only=create,list,watch,memory,fanout] [--creates=N] [--list-pods=N] "
                   "[--watchers=N] [--watch-writes=N] [--memory-pods=N] [--fanout-watchers=N] "
                   "[--fanout-writes=N] [--fanout-rate=N] [--fanout-threads=N] [--muster=PATH]\n"
                   "unknown argument: %s\n",
                   argv[0], argv[i]);
      return false;
    }
  }
  if (flags.creates < 1 || flags.list_pods < 1 || flags.watchers < 1 || flags.watch_writes < 1 ||
      flags.memory_pods < 1 || flags.fanout_watchers < 1 || flags.fanout_writes < 1 ||
      flags.fanout_rate < 1 || flags.fanout_threads < 1) {
    std::fprintf(stderr, "counts must be positive\n");
    return false;
  }
  return true;
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  muster::bench::Flags flags;
  if (!muster::bench::ParseFlags(argc, argv, flags)) return 2;
  ::signal(SIGPIPE, SIG_IGN);
  // 1,000 watch sockets here and as many in the server, which inherits this limit.
  muster::bench::RaiseFileLimit();
  std::printf("apiserver_benchmark: server %s, %u CPUs\n", flags.muster.c_str(),
              std::thread::hardware_concurrency());
  if (flags.Runs("create")) muster::bench::RunCreate(flags);
  if (flags.Runs("list")) muster::bench::RunList(flags);
  if (flags.Runs("watch")) muster::bench::RunWatch(flags);
  if (flags.Runs("memory")) muster::bench::RunMemory(flags);
  if (flags.Runs("fanout")) muster::bench::RunFanout(flags);
  return 0;
}
