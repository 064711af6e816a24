// Leader election (client/leader_election.h) against a real embedded API server: several
// candidates, each with its own Client over a transport the test can make fail or hang, compete
// for one Lease in kube-system, as replicas of `muster scheduler` do. Durations are short (a 2 s
// lease, 1 s renew deadline, 200 ms retry) unless a test needs them apart; expiry itself is
// checked with an injected clock.

#include "client/leader_election.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "api/json_access.h"
#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "client/client.h"
#include "fmt/format.h"

namespace muster::client {
namespace {

namespace json = boost::json;
using api::StringAt;
using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr char kNamespace[] = "kube-system";
constexpr char kLease[] = "muster-scheduler";

bool Eventually(const std::function<bool()>& condition, milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// Forwards to the server, unless told to fail (a transport error, as when the API server is
// unreachable) or to hang (as when packets are dropped) until told otherwise. Counts calls.
class FaultyTransport : public Transport {
 public:
  explicit FaultyTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}

  absl::StatusOr<Response> Do(const Request& request) override {
    ++calls;
    if (request.method == "GET") ++gets;
    while (hanging.load()) std::this_thread::sleep_for(5ms);
    if (failing.load()) return absl::UnavailableError("injected: connection refused");
    return inner_->Do(request);
  }
  absl::StatusOr<Response> Stream(const Request& request,
                                  const std::function<bool(std::string_view)>& on_line,
                                  const std::atomic<bool>& stop) override {
    return inner_->Stream(request, on_line, stop);
  }

  std::atomic<bool> failing{false};
  std::atomic<bool> hanging{false};
  std::atomic<int> calls{0};
  std::atomic<int> gets{0};

 private:
  std::shared_ptr<Transport> inner_;
};

struct Durations {
  milliseconds lease = 2s;
  milliseconds renew = 1s;
  milliseconds retry = 200ms;
};

// One replica: its transport, client, elector and what its callbacks saw.
struct Candidate {
  std::shared_ptr<FaultyTransport> transport;
  std::unique_ptr<Client> client;
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<int64_t> started_seq{0};  // the fixture's sequence at the callback; 0: never
  std::atomic<int64_t> stopped_seq{0};
  std::atomic<int> calls_at_stop{-1};
  std::mutex mu;
  std::vector<std::string> new_leaders;

  bool leading() const { return elector->IsLeader(); }
  const std::string& id() const { return elector->identity(); }
  std::vector<std::string> NewLeaders() {
    std::lock_guard lock(mu);
    return new_leaders;
  }
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("election");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    local_ = std::make_shared<apiserver::LocalTransport>(*server_);
    api_ = std::make_unique<Client>(local_);
  }

  void TearDown() override {
    candidates_.clear();  // each elector stops (and releases) before the server goes
    api_.reset();
    local_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  LeaderElectionConfig Config(const std::string& identity, Durations d = {}) {
    LeaderElectionConfig config;
    config.lease_namespace = kNamespace;
    config.lease_name = kLease;
    config.identity = identity;
    config.lease_duration = d.lease;
    config.renew_deadline = d.renew;
    config.retry_period = d.retry;
    config.on_started_leading = [] {};
    config.on_stopped_leading = [] {};
    return config;
  }

  // A candidate, not started. `config` gets the candidate's callbacks.
  Candidate& Make(LeaderElectionConfig config) {
    auto c = std::make_unique<Candidate>();
    Candidate* raw = c.get();
    raw->transport = std::make_shared<FaultyTransport>(local_);
    raw->client = std::make_unique<Client>(raw->transport);
    config.on_started_leading = [this, raw] {
      ++raw->started;
      raw->started_seq = ++seq_;
    };
    config.on_stopped_leading = [this, raw] {
      raw->calls_at_stop = raw->transport->calls.load();
      ++raw->stopped;
      raw->stopped_seq = ++seq_;
    };
    config.on_new_leader = [raw](const std::string& identity) {
      std::lock_guard lock(raw->mu);
      raw->new_leaders.push_back(identity);
    };
    auto elector = LeaderElector::Create(*raw->client, std::move(config));
    EXPECT_TRUE(elector.ok()) << elector.status();
    if (elector.ok()) raw->elector = std::move(*elector);
    candidates_.push_back(std::move(c));
    return *raw;
  }

  Candidate& Make(const std::string& identity, Durations d = {}) {
    return Make(Config(identity, d));
  }

  // Starts `c` and waits until it leads.
  void StartLeader(Candidate& c) {
    EXPECT_TRUE(c.elector->Start().ok());
    ASSERT_TRUE(Eventually([&] { return c.leading(); }, 5s)) << c.id() << " never led";
  }

  // Starts `c` and waits until it has seen `leader` holding the lease.
  void StartStandby(Candidate& c, const Candidate& leader) {
    EXPECT_TRUE(c.elector->Start().ok());
    ASSERT_TRUE(Eventually([&] { return c.elector->CurrentLeader() == leader.id(); }, 5s));
  }

  json::object Lease() {
    auto lease = api_->Get(Leases(), kNamespace, kLease);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : json::object();
  }
  static const json::object& Spec(const json::object& lease) {
    return lease.at("spec").as_object();
  }
  // -1 for anything but an int64, so a test sees a lease field written as another type.
  static int64_t Int(const json::object& obj, std::string_view key) {
    const json::value* v = obj.if_contains(key);
    return v != nullptr && v->is_int64() ? v->get_int64() : -1;
  }

  void CreateLease(const std::string& holder, int64_t duration_seconds, const std::string& time,
                   int64_t transitions) {
    json::object lease{
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", json::object{{"name", kLease}, {"namespace", kNamespace}}},
        {"spec", json::object{{"holderIdentity", holder},
                              {"leaseDurationSeconds", duration_seconds},
                              {"acquireTime", time},
                              {"renewTime", time},
                              {"leaseTransitions", transitions}}}};
    auto created = api_->Create(Leases(), kNamespace, std::move(lease));
    ASSERT_TRUE(created.ok()) << created.status();
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::shared_ptr<Transport> local_;
  std::unique_ptr<Client> api_;
  std::atomic<int64_t> seq_{0};
  std::vector<std::unique_ptr<Candidate>> candidates_;
};

const std::regex kMicroTime(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)");

TEST_F(LeaderElectionTest, InvalidConfigIsRefused) {
  Client client(local_);
  auto refused = [&](LeaderElectionConfig c) {
    return LeaderElector::Create(client, std::move(c)).status();
  };
  LeaderElectionConfig ok = Config("x", {.lease = 15s, .renew = 10s, .retry = 2s});
  EXPECT_TRUE(refused(ok).ok());

  LeaderElectionConfig c = ok;
  c.renew_deadline = c.lease_duration;
  absl::Status s = refused(c);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("lease duration (15s) must be longer than the renew deadline (15s)"),
            std::string::npos)
      << s;

  // renew_deadline must exceed retry_period * 1.2: 1 s against 900 ms (1.08 s) is refused,
  // against 800 ms (0.96 s) accepted.
  c = Config("x", {.lease = 2s, .renew = 1s, .retry = 900ms});
  s = refused(c);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("retry period (900ms) times 1.2"), std::string::npos) << s;
  EXPECT_TRUE(refused(Config("x", {.lease = 2s, .renew = 1s, .retry = 800ms})).ok());

  c = ok;
  c.retry_period = 0ms;
  EXPECT_TRUE(absl::IsInvalidArgument(refused(c)));
  c = ok;
  c.lease_name.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(refused(c)));
  c = ok;
  c.on_stopped_leading = nullptr;
  s = refused(c);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("on_stopped_leading"), std::string::npos) << s;
}

TEST(LeaderIdentityTest, IsTheHostnameAndARandomUuid) {
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  const std::string a = DefaultLeaderIdentity();
  const std::string b = DefaultLeaderIdentity();
  EXPECT_TRUE(std::regex_match(
      a, std::regex(std::string(host) +
                    "_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << a;
  EXPECT_NE(a, b);
}

TEST_F(LeaderElectionTest, OneOfTwoCandidatesLeadsAndRenews) {
  Candidate& a = Make("a");
  Candidate& b = Make("b");
  ASSERT_TRUE(a.elector->Start().ok());
  ASSERT_TRUE(b.elector->Start().ok());
  ASSERT_TRUE(Eventually([&] { return a.leading() || b.leading(); }, 5s));
  Candidate& leader = a.leading() ? a : b;
  Candidate& standby = a.leading() ? b : a;
  ASSERT_TRUE(Eventually([&] { return standby.elector->CurrentLeader() == leader.id(); }, 5s));

  json::object lease = Lease();
  const json::object spec = Spec(lease);
  EXPECT_EQ(StringAt(spec, "holderIdentity"), leader.id());
  EXPECT_EQ(Int(spec, "leaseDurationSeconds"), 2);
  EXPECT_EQ(Int(spec, "leaseTransitions"), 0);  // created by its first holder
  EXPECT_TRUE(std::regex_match(StringAt(spec, "renewTime"), kMicroTime))
      << StringAt(spec, "renewTime");
  EXPECT_TRUE(std::regex_match(StringAt(spec, "acquireTime"), kMicroTime))
      << StringAt(spec, "acquireTime");

  // The leader renews (renewTime moves, acquireTime stays) and the standby keeps waiting.
  const std::string first_renew = StringAt(spec, "renewTime");
  std::string second_renew;
  ASSERT_TRUE(Eventually(
      [&] {
        second_renew = StringAt(Spec(Lease()), "renewTime");
        return second_renew != first_renew && !second_renew.empty();
      },
      3s));
  ASSERT_TRUE(Eventually([&] { return StringAt(Spec(Lease()), "renewTime") != second_renew; }, 3s));
  lease = Lease();
  EXPECT_EQ(StringAt(Spec(lease), "holderIdentity"), leader.id());
  EXPECT_EQ(StringAt(Spec(lease), "acquireTime"), StringAt(spec, "acquireTime"));
  EXPECT_TRUE(leader.leading());
  EXPECT_FALSE(standby.leading());
  EXPECT_EQ(leader.started, 1);
  EXPECT_EQ(standby.started, 0);
  EXPECT_EQ(leader.stopped, 0);
  EXPECT_EQ(standby.NewLeaders(), std::vector<std::string>{leader.id()});
  EXPECT_EQ(leader.NewLeaders(), std::vector<std::string>{leader.id()});
}

TEST_F(LeaderElectionTest, StopReleasesTheLeaseAndStopWithoutReleaseLeavesIt) {
  Candidate& a = Make("a");
  StartLeader(a);
  a.elector->Stop();
  EXPECT_FALSE(a.leading());
  EXPECT_EQ(a.stopped, 1);
  json::object spec = Spec(Lease());
  EXPECT_EQ(StringAt(spec, "holderIdentity"), "");  // client-go's tryRelease
  EXPECT_EQ(Int(spec, "leaseDurationSeconds"), 1);
  EXPECT_EQ(Int(spec, "leaseTransitions"), 0);
  EXPECT_TRUE(std::regex_match(StringAt(spec, "renewTime"), kMicroTime));

  Candidate& b = Make("b");
  StartLeader(b);
  EXPECT_EQ(Int(Spec(Lease()), "leaseTransitions"), 1);
  b.elector->Stop(/*release=*/false);
  EXPECT_EQ(b.stopped, 1);
  spec = Spec(Lease());
  EXPECT_EQ(StringAt(spec, "holderIdentity"), "b");
  EXPECT_EQ(Int(spec, "leaseDurationSeconds"), 2);
}

TEST_F(LeaderElectionTest, AStandbyTakesAReleasedLeaseAtOnce) {
  // A 4 s lease: without the release the standby would wait well over 3 s.
  const Durations d{.lease = 4s, .renew = 2s, .retry = 200ms};
  Candidate& a = Make("a", d);
  Candidate& b = Make("b", d);
  StartLeader(a);
  StartStandby(b, a);
  a.elector->Stop();
  EXPECT_TRUE(Eventually([&] { return b.leading(); }, 2s));
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "b");
  EXPECT_EQ(Int(Spec(Lease()), "leaseTransitions"), 1);
  EXPECT_EQ(b.started, 1);
  EXPECT_LT(a.stopped_seq, b.started_seq);
}

TEST_F(LeaderElectionTest, ALeaderThatDiesIsReplacedOnceItsLeaseExpires) {
  Candidate& a = Make("a");
  Candidate& b = Make("b");
  StartLeader(a);
  StartStandby(b, a);
  a.elector->Stop(/*release=*/false);  // as if the process were killed
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "a");
  // lease_duration after b last saw a renew, plus b's jittered retry.
  EXPECT_TRUE(Eventually([&] { return b.leading(); }, 2s + 440ms + 2s));
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "b");
  EXPECT_EQ(Int(Spec(Lease()), "leaseTransitions"), 1);
}

TEST_F(LeaderElectionTest, ALeaderThatCannotReachTheServerStopsBeforeAnotherLeads) {
  Candidate& a = Make("a");
  Candidate& b = Make("b");
  StartLeader(a);
  StartStandby(b, a);
  a.transport->failing = true;
  // renew_deadline after its last renewal, which was at most a retry period before.
  EXPECT_TRUE(Eventually([&] { return a.stopped == 1; }, 1s + 200ms + 1s));
  EXPECT_FALSE(a.leading());
  ASSERT_TRUE(Eventually([&] { return b.leading(); }, 2s + 440ms + 2s));
  EXPECT_LT(a.stopped_seq, b.started_seq) << "b started leading before a stopped";
  // Its connection back, a calls the server no more (at most the one call in flight when the
  // term ended): waiting three of its retry periods, a live loop would have made three.
  a.transport->failing = false;
  std::this_thread::sleep_for(3 * 200ms);
  EXPECT_LE(a.transport->calls - a.calls_at_stop, 1);
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "b");
  EXPECT_EQ(a.started, 1);
  EXPECT_EQ(a.stopped, 1);
}

TEST_F(LeaderElectionTest, ALeaderWhoseCallsHangStopsAtTheDeadline) {
  Candidate& a = Make("a");
  Candidate& b = Make("b");
  StartLeader(a);
  StartStandby(b, a);
  a.transport->hanging = true;  // no answer, no error: only the watchdog can end the term
  EXPECT_TRUE(Eventually([&] { return a.stopped == 1; }, 1s + 200ms + 1s));
  EXPECT_FALSE(a.leading());
  ASSERT_TRUE(Eventually([&] { return b.leading(); }, 2s + 440ms + 2s));
  EXPECT_LT(a.stopped_seq, b.started_seq) << "b started leading before a stopped";
  a.transport->hanging = false;  // lets a's loop return, so that Stop can join it
  a.elector->Stop();
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "b");  // a lost it: no release of b's lease
}

TEST_F(LeaderElectionTest, ALeaderThatFindsAnotherHolderStopsAtOnceAndLeavesTheLeaseAlone) {
  // A 5 s renew deadline: stopping within 2 s is the other holder's doing, not the deadline's.
  Candidate& a = Make("a", {.lease = 10s, .renew = 5s, .retry = 200ms});
  StartLeader(a);
  json::object lease = Lease();
  json::object& spec = lease["spec"].as_object();
  spec["holderIdentity"] = "intruder";
  spec["leaseDurationSeconds"] = 3600;
  ASSERT_TRUE(api_->Update(Leases(), lease).ok());
  EXPECT_TRUE(Eventually([&] { return a.stopped == 1; }, 2s));
  EXPECT_FALSE(a.leading());
  EXPECT_EQ(a.elector->CurrentLeader(), "intruder");
  a.elector->Stop();
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "intruder");
  EXPECT_EQ(Int(Spec(Lease()), "leaseDurationSeconds"), 3600);
}

TEST_F(LeaderElectionTest, ExpiryIsJudgedByOurClockNotByTheRecordedRenewTime) {
  // A holder whose clock says 2000: its renewTime is 26 years old, yet the lease is valid until
  // it has gone unchanged for its 3600 s by our clock.
  CreateLease("ghost", 3600, "2000-01-01T00:00:00.000000Z", 4);
  auto offset = std::make_shared<std::atomic<int64_t>>(0);  // ms added to the steady clock
  LeaderElectionConfig config = Config("c");
  config.clock = [offset] { return SteadyClock::now() + milliseconds(offset->load()); };
  Candidate& c = Make(std::move(config));
  ASSERT_TRUE(c.elector->Start().ok());
  ASSERT_TRUE(Eventually([&] { return c.elector->CurrentLeader() == "ghost"; }, 3s));
  const int gets = c.transport->gets;
  ASSERT_TRUE(Eventually([&] { return c.transport->gets >= gets + 3; }, 5s));
  EXPECT_FALSE(c.leading());
  EXPECT_EQ(c.started, 0);
  EXPECT_EQ(StringAt(Spec(Lease()), "holderIdentity"), "ghost");

  offset->store(3601 * 1000);
  ASSERT_TRUE(Eventually([&] { return c.leading(); }, 3s));
  json::object spec = Spec(Lease());
  EXPECT_EQ(StringAt(spec, "holderIdentity"), "c");
  EXPECT_EQ(Int(spec, "leaseTransitions"), 5);
  EXPECT_NE(StringAt(spec, "acquireTime"), "2000-01-01T00:00:00.000000Z");
  EXPECT_EQ(c.NewLeaders(), (std::vector<std::string>{"ghost", "c"}));
}

TEST_F(LeaderElectionTest, ALeaseHeldByOurIdentityIsOursAtOnce) {
  // A restarted process with the identity it had (a fixed --identity): no wait for expiry, and
  // no transition.
  CreateLease("me", 3600, "2024-05-01T12:00:00.000000Z", 2);
  Candidate& me = Make("me");
  StartLeader(me);
  json::object spec = Spec(Lease());
  EXPECT_EQ(Int(spec, "leaseTransitions"), 2);
  EXPECT_EQ(StringAt(spec, "acquireTime"), "2024-05-01T12:00:00.000000Z");
  EXPECT_EQ(Int(spec, "leaseDurationSeconds"), 2);
}

TEST_F(LeaderElectionTest, LeaseDurationIsRoundedUpToWholeSeconds) {
  Candidate& a = Make("a", {.lease = 1500ms, .renew = 1s, .retry = 200ms});
  StartLeader(a);
  EXPECT_EQ(Int(Spec(Lease()), "leaseDurationSeconds"), 2);
}

}  // namespace
}  // namespace muster::client
