// Crash safety of a real `muster apiserver` process: SIGKILL it in the middle of a stream of
// writes, restart it on the same data directory, and check that every write acknowledged before
// the kill is there with the acknowledged resourceVersion, and that resourceVersions keep
// increasing after the restart. Three rounds, each killed at a different moment.

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "e2e_support.h"
#include "fmt/format.h"

namespace muster::e2e {
namespace {

namespace json = boost::json;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";

std::string PodJson(const std::string& name) {
  return fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","labels":{{"app":"crash"}}}},)"
      R"("spec":{{"containers":[{{"name":"main","image":"busybox"}}]}}}})",
      name);
}

// metadata.resourceVersion as the number muster's store counts in.
int64_t ResourceVersionNumber(const json::value& v) {
  return std::stoll(std::string(v.at("metadata").at("resourceVersion").as_string()));
}

TEST(CrashE2E, AcknowledgedWritesSurviveSigkill) {
  TempDir temp;
  const std::string& dir = temp.path();
  std::map<std::string, int64_t> acknowledged;  // name -> resourceVersion returned
  int64_t max_rv = 0;

  for (int round = 0; round < 3; ++round) {
    auto server = ServerProcess::Start(MusterBinary(), dir);
    ASSERT_TRUE(server.has_value()) << "round " << round << ": muster apiserver did not start";

    // Everything acknowledged so far is there, unchanged.
    TestHttpClient reader(server->port());
    for (const auto& [name, rv] : acknowledged) {
      auto r = reader.Send("GET", fmt::format("{}/{}", kPods, name));
      ASSERT_TRUE(r.has_value());
      ASSERT_EQ(r->status, 200) << "round " << round << ": acknowledged pod " << name
                                << " lost: " << r->body;
      EXPECT_EQ(ResourceVersionNumber(json::parse(r->body)), rv) << name;
    }
    auto list = reader.Send("GET", fmt::format("{}?labelSelector=app%3Dcrash", kPods));
    ASSERT_TRUE(list.has_value());
    ASSERT_EQ(list->status, 200);
    EXPECT_GE(ResourceVersionNumber(json::parse(list->body)), max_rv);
    EXPECT_GE(json::parse(list->body).at("items").as_array().size(), acknowledged.size());

    // Writers stream creates on two connections until the server dies under them.
    std::mutex mu;
    std::atomic<int> acked_this_round{0};
    int64_t first_rv_this_round = 0;
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, w] {
        TestHttpClient client(server->port());
        for (int i = 0;; ++i) {
          std::string name = fmt::format("crash-r{}-w{}-{}", round, w, i);
          auto r = client.Send("POST", kPods, PodJson(name));
          if (!r.has_value()) return;  // the server is gone
          if (r->status != 201) {
            ADD_FAILURE() << "create " << name << ": " << r->status << " " << r->body;
            return;
          }
          int64_t rv = ResourceVersionNumber(json::parse(r->body));
          std::lock_guard lock(mu);
          if (first_rv_this_round == 0 || rv < first_rv_this_round) first_rv_this_round = rv;
          acknowledged[name] = rv;
          acked_this_round++;
        }
      });
    }
    const int kill_after = 50 + 150 * round;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (acked_this_round < kill_after && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    int status = server->Kill(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    for (auto& t : writers) t.join();
    ASSERT_GE(acked_this_round.load(), kill_after) << "round " << round << ": writes too slow";
    // Revisions keep increasing across restarts.
    EXPECT_GT(first_rv_this_round, max_rv) << "round " << round;
    for (const auto& [name, rv] : acknowledged) max_rv = std::max(max_rv, rv);
  }

  // A last restart: every acknowledged write of every round is there.
  auto server = ServerProcess::Start(MusterBinary(), dir);
  ASSERT_TRUE(server.has_value());
  TestHttpClient reader(server->port());
  for (const auto& [name, rv] : acknowledged) {
    auto r = reader.Send("GET", fmt::format("{}/{}", kPods, name));
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 200) << "acknowledged pod " << name << " lost";
    EXPECT_EQ(ResourceVersionNumber(json::parse(r->body)), rv) << name;
  }
  auto r = reader.Send("POST", kPods, PodJson("after-last-restart"));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_GT(ResourceVersionNumber(json::parse(r->body)), max_rv);
}

}  // namespace
}  // namespace muster::e2e
