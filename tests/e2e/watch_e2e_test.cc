// Watch fan-out against a real `muster apiserver` process over HTTP:
//   - 100 concurrent watchers, each from the same resourceVersion, see every event of 1,000
//     writes (creates, then updates), in order, with the resourceVersions the writes returned;
//   - a watcher from a resourceVersion older than the retained history gets one ERROR event
//     (410, reason Expired) and the end of the stream; a relist and a watch from the list's
//     resourceVersion then work.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "e2e_support.h"
#include "fmt/format.h"

namespace muster::e2e {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;

constexpr int kWatchers = 100;
constexpr int kWrites = 1000;
constexpr int kObjects = kWrites / 2;  // created, then each updated once

std::string LeaseJson(int i) {
  return fmt::format(
      R"({{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"lease-{}"}},)"
      R"("spec":{{"holderIdentity":"creator"}}}})",
      i);
}

const char* kLeases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

std::string ResourceVersion(const json::value& v) {
  return std::string(v.at("metadata").at("resourceVersion").as_string());
}

struct SeenEvent {
  std::string type;
  std::string name;
  std::string resource_version;
};

TEST(WatchE2E, HundredWatchersSeeEveryWriteInOrder) {
  TempDir dir;
  auto server = ServerProcess::Start(MusterBinary(), dir.path());
  ASSERT_TRUE(server.has_value()) << "muster apiserver did not start";

  TestHttpClient setup(server->port());
  auto list = setup.Send("GET", kLeases);
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->status, 200) << list->body;
  const std::string start_rv = ResourceVersion(json::parse(list->body));

  // Every watcher opens its stream before the first write.
  std::vector<std::unique_ptr<TestHttpClient>> clients;
  for (int w = 0; w < kWatchers; ++w) {
    clients.push_back(std::make_unique<TestHttpClient>(server->port()));
    ASSERT_TRUE(clients.back()->connected());
    auto status = clients.back()->OpenStream(
        fmt::format("{}?watch=true&resourceVersion={}", kLeases, start_rv));
    ASSERT_EQ(status.value_or(0), 200);
  }

  std::vector<std::vector<SeenEvent>> seen(kWatchers);
  std::vector<std::thread> readers;
  for (int w = 0; w < kWatchers; ++w) {
    readers.emplace_back([&, w] {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
      while (static_cast<int>(seen[w].size()) < kWrites &&
             std::chrono::steady_clock::now() < deadline) {
        auto line = clients[w]->ReadLine(milliseconds(1000));
        if (!line) {
          if (!clients[w]->connected() || clients[w]->stream_ended()) return;
          continue;
        }
        json::error_code ec;
        json::value event = json::parse(*line, ec);
        if (ec) return;
        const auto& object = event.at("object");
        seen[w].push_back({std::string(event.at("type").as_string()),
                           std::string(object.at("metadata").at("name").as_string()),
                           ResourceVersion(object)});
      }
    });
  }

  // The writes, over one keep-alive connection; remember what each returned.
  std::vector<SeenEvent> written;
  TestHttpClient writer(server->port());
  for (int i = 0; i < kObjects; ++i) {
    auto r = writer.Send("POST", kLeases, LeaseJson(i));
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 201) << r->body;
    written.push_back({"ADDED", fmt::format("lease-{}", i), ResourceVersion(json::parse(r->body))});
  }
  for (int i = 0; i < kObjects; ++i) {
    auto r =
        writer.Send("PATCH", fmt::format("{}/lease-{}", kLeases, i),
                    R"({"spec":{"holderIdentity":"updater"}})", "application/merge-patch+json");
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 200) << r->body;
    written.push_back(
        {"MODIFIED", fmt::format("lease-{}", i), ResourceVersion(json::parse(r->body))});
  }
  for (auto& t : readers) t.join();

  for (int w = 0; w < kWatchers; ++w) {
    ASSERT_EQ(seen[w].size(), written.size()) << "watcher " << w;
    for (size_t i = 0; i < written.size(); ++i) {
      ASSERT_EQ(seen[w][i].type, written[i].type) << "watcher " << w << " event " << i;
      ASSERT_EQ(seen[w][i].name, written[i].name) << "watcher " << w << " event " << i;
      ASSERT_EQ(seen[w][i].resource_version, written[i].resource_version)
          << "watcher " << w << " event " << i;
    }
  }
}

TEST(WatchE2E, ExpiredResourceVersionGets410AndRelistWorks) {
  TempDir dir;
  // A short history, so that a few hundred writes push the first ones out.
  auto server = ServerProcess::Start(MusterBinary(), dir.path(), {"--watch-history", "50"});
  ASSERT_TRUE(server.has_value()) << "muster apiserver did not start";

  TestHttpClient client(server->port());
  auto first = client.Send("POST", kLeases, LeaseJson(0));
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->status, 201) << first->body;
  const std::string old_rv = ResourceVersion(json::parse(first->body));
  for (int i = 1; i < 200; ++i) {
    auto r = client.Send("POST", kLeases, LeaseJson(i));
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 201) << r->body;
  }

  TestHttpClient stale(server->port());
  ASSERT_EQ(stale.OpenStream(fmt::format("{}?watch=true&resourceVersion={}", kLeases, old_rv))
                .value_or(0),
            200);
  auto line = stale.ReadLine(milliseconds(5000));
  ASSERT_TRUE(line.has_value());
  json::value event = json::parse(*line);
  EXPECT_EQ(event.at("type").as_string(), "ERROR");
  EXPECT_EQ(event.at("object").at("kind").as_string(), "Status");
  EXPECT_EQ(event.at("object").at("code").as_int64(), 410);
  EXPECT_EQ(event.at("object").at("reason").as_string(), "Expired");
  EXPECT_FALSE(stale.ReadLine(milliseconds(5000)).has_value());
  EXPECT_TRUE(stale.stream_ended()) << "the stream should end after the ERROR event";

  // Relist, then watch from the list's resourceVersion: the next write arrives.
  auto list = client.Send("GET", kLeases);
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->status, 200);
  json::value parsed = json::parse(list->body);
  EXPECT_EQ(parsed.at("items").as_array().size(), 200u);
  const std::string list_rv = ResourceVersion(parsed);

  TestHttpClient fresh(server->port());
  ASSERT_EQ(fresh.OpenStream(fmt::format("{}?watch=true&resourceVersion={}", kLeases, list_rv))
                .value_or(0),
            200);
  auto created = client.Send("POST", kLeases, LeaseJson(1000));
  ASSERT_TRUE(created.has_value());
  ASSERT_EQ(created->status, 201);
  auto next = fresh.ReadLine(milliseconds(5000));
  ASSERT_TRUE(next.has_value());
  json::value added = json::parse(*next);
  EXPECT_EQ(added.at("type").as_string(), "ADDED");
  EXPECT_EQ(added.at("object").at("metadata").at("name").as_string(), "lease-1000");
}

}  // namespace
}  // namespace muster::e2e
