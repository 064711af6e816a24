// Leader election over a Lease (leader_election.h), restating client-go's
// tools/leaderelection/leaderelection.go (acquire, renew, tryAcquireOrRenew, tryRelease,
// isLeaseValid) and resourcelock/leaselock.go (the record <-> LeaseSpec mapping).

#include "client/leader_election.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "api/json_access.h"
#include "api/time.h"
#include "boost/json/value.hpp"
#include "common/thread.h"
#include "fmt/format.h"

namespace muster::client {

namespace json = boost::json;
using std::chrono::milliseconds;

namespace {

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  return rng;
}

// "1s", "1.5s", "200ms".
std::string Seconds(milliseconds d) {
  if (d.count() % 1000 == 0) return fmt::format("{}s", d.count() / 1000);
  if (d.count() < 1000) return fmt::format("{}ms", d.count());
  return fmt::format("{:g}s", static_cast<double>(d.count()) / 1000);
}

using api::StringAt;

// resourcelock.LeaseSpecToLeaderElectionRecord.
LeaderElectionRecord RecordOf(const json::object& lease) {
  LeaderElectionRecord r;
  const json::value* spec = lease.if_contains("spec");
  if (spec == nullptr || !spec->is_object()) return r;
  const json::object& s = spec->get_object();
  r.holder_identity = StringAt(s, "holderIdentity");
  r.lease_duration_seconds = api::TruncatedIntAt(s, "leaseDurationSeconds").value_or(0);
  r.acquire_time = StringAt(s, "acquireTime");
  r.renew_time = StringAt(s, "renewTime");
  r.lease_transitions = api::TruncatedIntAt(s, "leaseTransitions").value_or(0);
  return r;
}

// resourcelock.LeaderElectionRecordToLeaseSpec: the whole spec is the record.
json::object SpecOf(const LeaderElectionRecord& r) {
  json::object spec{{"holderIdentity", r.holder_identity},
                    {"leaseDurationSeconds", r.lease_duration_seconds},
                    {"leaseTransitions", r.lease_transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return spec;
}

json::object WithRecord(json::object lease, const LeaderElectionRecord& r) {
  lease["spec"] = SpecOf(r);
  return lease;
}

std::string ErrorText(const absl::Status& s) { return std::string(s.message()); }

}  // namespace

std::string DefaultLeaderIdentity() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "localhost");
  }
  std::uniform_int_distribution<uint64_t> dist;
  uint64_t hi = dist(Rng()), lo = dist(Rng());
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  return fmt::format("{}_{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", host, hi >> 32,
                     (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  auto refuse = [](std::string what) {
    return absl::InvalidArgumentError("leader election: " + what);
  };
  if (c.lease_name.empty()) return refuse("the lease name is empty");
  if (c.lease_namespace.empty()) return refuse("the lease namespace is empty");
  if (c.lease_duration <= milliseconds(0)) return refuse("the lease duration must be positive");
  if (c.renew_deadline <= milliseconds(0)) return refuse("the renew deadline must be positive");
  if (c.retry_period <= milliseconds(0)) return refuse("the retry period must be positive");
  if (c.lease_duration <= c.renew_deadline) {
    return refuse(fmt::format(
        "the lease duration ({}) must be longer than the renew deadline ({}), so that a leader "
        "that cannot renew stops before others may take the lease",
        Seconds(c.lease_duration), Seconds(c.renew_deadline)));
  }
  if (static_cast<double>(c.renew_deadline.count()) <=
      kLeaderElectionJitterFactor * static_cast<double>(c.retry_period.count())) {
    return refuse(fmt::format(
        "the renew deadline ({}) must be longer than the retry period ({}) times {}",
        Seconds(c.renew_deadline), Seconds(c.retry_period), kLeaderElectionJitterFactor));
  }
  if (!c.on_started_leading) return refuse("on_started_leading is not set");
  if (!c.on_stopped_leading) return refuse("on_stopped_leading is not set");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(Client& client,
                                                                     LeaderElectionConfig config) {
  if (absl::Status valid = ValidateLeaderElectionConfig(config); !valid.ok()) return valid;
  if (config.identity.empty()) config.identity = DefaultLeaderIdentity();
  if (!config.clock) config.clock = [] { return std::chrono::steady_clock::now(); };
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(config)));
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config)
    : client_(client),
      config_(std::move(config)),
      lease_duration_seconds_(std::max<int64_t>(
          1, (config_.lease_duration.count() + 999) / 1000)) {}

LeaderElector::~LeaderElector() { Stop(true); }

absl::Status LeaderElector::Start() {
  absl::Status started;
  {
    std::lock_guard lock(mu_);
    if (started_ || stopping_) return absl::OkStatus();
    started_ = true;
    started = common::StartThread(loop_, "leader election", [this] { Loop(); });
    if (started.ok()) {
      started = common::StartThread(watchdog_, "the leader election watchdog",
                                    [this] { Watchdog(); });
    }
  }
  if (!started.ok()) Stop(/*release=*/false);  // the loop, if it started, has not led yet
  return started;
}

void LeaderElector::Stop(bool release) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  if (watchdog_.joinable()) watchdog_.join();
  bool ours = false;
  {
    std::unique_lock lock(mu_);
    ours = !lost_ && have_lease_ && observed_.holder_identity == config_.identity;
    EndTerm(lock, /*lost=*/false);
  }
  // After on_stopped_leading: the caller's work has stopped before a standby can take over.
  if (release && ours && TryRelease()) {
    Log(fmt::format("released lease {}/{}", config_.lease_namespace, config_.lease_name));
  }
}

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return leading_;
}

std::string LeaderElector::CurrentLeader() const {
  std::lock_guard lock(mu_);
  return observed_.holder_identity;
}

void LeaderElector::Log(const std::string& line) const {
  if (config_.log) config_.log(line);
}

bool LeaderElector::Cancelled() const {
  std::lock_guard lock(mu_);
  return stopping_ || lost_;
}

bool LeaderElector::Sleep(milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_ || lost_; });
  return !stopping_ && !lost_;
}

void LeaderElector::Loop() {
  const std::string lease = config_.lease_namespace + "/" + config_.lease_name;
  // acquire(): try every retry_period, jittered, until the lease is ours or Stop.
  std::uniform_real_distribution<double> jitter(0, kLeaderElectionJitterFactor);
  for (;;) {
    const TimePoint attempt = Now();
    const bool acquired = TryAcquireOrRenew();
    ReportTransition();
    if (acquired) {
      std::lock_guard lock(mu_);
      if (stopping_) return;  // Stop releases it
      leading_ = true;
      term_announced_ = false;
      last_renew_ = attempt;
      break;
    }
    const auto wait = milliseconds(static_cast<int64_t>(
        static_cast<double>(config_.retry_period.count()) * (1 + jitter(Rng()))));
    if (!Sleep(wait)) return;
  }
  Log(fmt::format("acquired lease {} as {}", lease, config_.identity));
  config_.on_started_leading();
  {
    std::lock_guard lock(mu_);
    term_announced_ = true;
  }
  cv_.notify_all();

  // renew(): every retry_period; the term ends when no renewal has succeeded for renew_deadline
  // (the watchdog ends it too, should a call hang) or another identity is found holding it.
  while (Sleep(config_.retry_period)) {
    const TimePoint attempt = Now();
    const bool renewed = TryAcquireOrRenew();
    ReportTransition();
    std::unique_lock lock(mu_);
    if (!leading_ || stopping_) break;
    if (renewed) {
      last_renew_ = attempt;
      continue;
    }
    // Another holder: someone took the lease (by hand, or after judging it expired), so stop
    // now rather than at the deadline (client-go polls on until the deadline).
    if (!observed_.holder_identity.empty() && observed_.holder_identity != config_.identity) {
      EndTerm(lock, /*lost=*/true,
              fmt::format("lease {} is now held by {}: stopped leading", lease,
                          observed_.holder_identity));
      break;
    }
    if (Now() - last_renew_ >= config_.renew_deadline) {
      EndTerm(lock, /*lost=*/true,
              fmt::format("failed to renew lease {} within {}: stopped leading", lease,
                          Seconds(config_.renew_deadline)));
      break;
    }
  }
}

void LeaderElector::Watchdog() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (!leading_ || !term_announced_) {
      cv_.wait(lock);
      continue;
    }
    const TimePoint deadline = last_renew_ + config_.renew_deadline;
    const TimePoint now = Now();
    if (now >= deadline) {
      EndTerm(lock, /*lost=*/true,
              fmt::format("no renewal of lease {}/{} succeeded within {}: stopped leading",
                          config_.lease_namespace, config_.lease_name,
                          Seconds(config_.renew_deadline)));
      continue;
    }
    // At most a retry period at a time, for a clock that is not the steady one.
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now,
                                                                     config_.retry_period));
  }
}

void LeaderElector::EndTerm(std::unique_lock<std::mutex>& lock, bool lost,
                            const std::string& why) {
  if (!leading_) return;
  leading_ = false;
  if (lost) lost_ = true;
  cv_.notify_all();
  lock.unlock();
  if (!why.empty()) Log(why);
  config_.on_stopped_leading();
  lock.lock();
}

void LeaderElector::SetObserved(const LeaderElectionRecord& record) {
  const TimePoint now = Now();
  std::lock_guard lock(mu_);
  observed_ = record;
  observed_time_ = now;
}

bool LeaderElector::ObservedLeaseValid(TimePoint now) const {
  std::lock_guard lock(mu_);
  return observed_time_ + std::chrono::seconds(observed_.lease_duration_seconds) > now;
}

bool LeaderElector::ObservedIsUs() const {
  std::lock_guard lock(mu_);
  return observed_.holder_identity == config_.identity;
}

void LeaderElector::ReportTransition() {
  std::string holder = CurrentLeader();
  if (holder == reported_leader_) return;
  reported_leader_ = holder;
  if (!holder.empty() && config_.on_new_leader) config_.on_new_leader(holder);
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now = api::FormatMicroTime(std::chrono::system_clock::now());
  LeaderElectionRecord desired{.holder_identity = config_.identity,
                               .lease_duration_seconds = lease_duration_seconds_,
                               .acquire_time = now,
                               .renew_time = now,
                               .lease_transitions = 0};
  const std::string lease_name = config_.lease_namespace + "/" + config_.lease_name;

  // The fast path: the lease is ours and not expired by our clock, so write it straight away
  // with the resourceVersion of our last write; any failure (a 409 when someone else wrote) goes
  // on to read it.
  if (have_lease_ && ObservedIsUs() && ObservedLeaseValid(Now())) {
    LeaderElectionRecord observed;
    {
      std::lock_guard lock(mu_);
      observed = observed_;
    }
    desired.acquire_time = observed.acquire_time;
    desired.lease_transitions = observed.lease_transitions;
    if (Cancelled()) return false;
    auto updated = client_.Update(Leases(), WithRecord(lease_, desired));
    if (updated.ok()) {
      lease_ = std::move(*updated);
      SetObserved(desired);
      return true;
    }
  }

  if (Cancelled()) return false;
  auto got = client_.Get(Leases(), config_.lease_namespace, config_.lease_name);
  if (!got.ok()) {
    if (!absl::IsNotFound(got.status())) {
      Log(fmt::format("cannot read lease {}: {}", lease_name, ErrorText(got.status())));
      return false;
    }
    if (Cancelled()) return false;
    json::object lease{{"apiVersion", "coordination.k8s.io/v1"},
                       {"kind", "Lease"},
                       {"metadata", json::object{{"name", config_.lease_name},
                                                 {"namespace", config_.lease_namespace}}},
                       {"spec", SpecOf(desired)}};
    auto created = client_.Create(Leases(), config_.lease_namespace, std::move(lease));
    if (!created.ok()) {
      // AlreadyExists: another candidate created it first; the next try reads it.
      if (!absl::IsAlreadyExists(created.status())) {
        Log(fmt::format("cannot create lease {}: {}", lease_name, ErrorText(created.status())));
      }
      return false;
    }
    lease_ = std::move(*created);
    have_lease_ = true;
    SetObserved(desired);
    return true;
  }
  lease_ = std::move(*got);
  have_lease_ = true;
  const LeaderElectionRecord current = RecordOf(lease_);
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    changed = current != observed_;
  }
  // A change restarts the expiry count from now: the holder renewed, whatever its clock says.
  if (changed) SetObserved(current);
  if (!current.holder_identity.empty() && current.holder_identity != config_.identity &&
      ObservedLeaseValid(Now())) {
    return false;  // held, and not expired
  }
  if (current.holder_identity == config_.identity) {
    desired.acquire_time = current.acquire_time;
    desired.lease_transitions = current.lease_transitions;
  } else {
    desired.lease_transitions = current.lease_transitions + 1;
  }
  if (Cancelled()) return false;
  auto updated = client_.Update(Leases(), WithRecord(lease_, desired));
  if (!updated.ok()) {
    // Aborted: someone else wrote since our read; the next try reads it again.
    if (!absl::IsAborted(updated.status())) {
      Log(fmt::format("cannot update lease {}: {}", lease_name, ErrorText(updated.status())));
    }
    return false;
  }
  lease_ = std::move(*updated);
  SetObserved(desired);
  return true;
}

bool LeaderElector::TryRelease() {
  const TimePoint give_up = Now() + config_.renew_deadline;
  for (;;) {
    auto got = client_.Get(Leases(), config_.lease_namespace, config_.lease_name);
    if (!got.ok()) {
      Log(fmt::format("cannot release lease {}/{}: {}", config_.lease_namespace,
                      config_.lease_name, ErrorText(got.status())));
      return false;
    }
    const LeaderElectionRecord current = RecordOf(*got);
    if (current.holder_identity != config_.identity) return false;  // no longer ours to release
    const std::string now = api::FormatMicroTime(std::chrono::system_clock::now());
    const LeaderElectionRecord released{.holder_identity = "",
                                        .lease_duration_seconds = 1,
                                        .acquire_time = now,
                                        .renew_time = now,
                                        .lease_transitions = current.lease_transitions};
    auto updated = client_.Update(Leases(), WithRecord(std::move(*got), released));
    if (updated.ok()) {
      lease_ = std::move(*updated);
      SetObserved(released);
      return true;
    }
    if (!absl::IsAborted(updated.status()) || Now() >= give_up) {
      Log(fmt::format("cannot release lease {}/{}: {}", config_.lease_namespace,
                      config_.lease_name, ErrorText(updated.status())));
      return false;
    }
  }
}

}  // namespace muster::client
