#pragma once

// Leader election over a coordination.k8s.io/v1 Lease, as client-go's
// tools/leaderelection (leaderelection.go, resourcelock/leaselock.go) does it, so that several
// replicas of `muster scheduler` or `muster controller` run with one of them active and the
// others standing by, and so that muster and client-go candidates respect each other's leases.
//
// The Lease's spec is the record: holderIdentity, leaseDurationSeconds, acquireTime, renewTime
// (metav1.MicroTime, RFC 3339 with 6 fractional digits) and leaseTransitions.
//
// - Acquiring: a candidate takes the lease when it does not exist (it creates it), when it is
//   held by nobody (holderIdentity ""), when it is held by this identity already, or when it has
//   expired. Expiry is judged by this candidate's own clock, never by the recorded renewTime:
//   the lease has expired when the record has not changed for leaseDurationSeconds since this
//   candidate last saw it change, which does not depend on the holder's clock agreeing with
//   ours. Taking a lease another identity held increments leaseTransitions and sets
//   acquireTime. Candidates retry every retry_period, jittered (JitterFactor 1.2) as client-go's.
// - Renewing: the leader writes renewTime every retry_period, with the resourceVersion of its
//   last write (a 409 means someone else wrote: the lease is read again and judged afresh).
// - Losing: when no renewal has succeeded for renew_deadline since the last one that did (counted
//   from when that request was sent), the leader stops leading (on_stopped_leading) - also when
//   an API call hangs, since a watchdog thread keeps the deadline. renew_deadline <
//   lease_duration, so the leader stops before any other candidate may consider the lease
//   expired. client-go counts the deadline from the start of each renewal round (up to a
//   retry_period later); muster from the last success. A leader that reads the lease and finds
//   another identity holding it stops at once (client-go polls on until the deadline). Once it
//   has lost, an elector makes no more API calls: a process that lost the lease exits, as
//   kube-scheduler does, or makes a new elector.
// - Releasing: Stop() of a leader (release = true, client-go's ReleaseOnCancel) writes
//   holderIdentity "" with leaseDurationSeconds 1, as client-go does, so that a standby takes
//   over at its next retry instead of waiting for the lease to expire. It releases only a lease
//   this identity still holds.
//
// leaseDurationSeconds is whole seconds: lease_duration rounded up (client-go truncates; up
// keeps the others waiting at least as long as this elector assumes).
//
// Thread-safety: Start, Stop and the destructor from one thread; IsLeader, CurrentLeader and
// identity from any. Callbacks run on the elector's threads and must return promptly (hand
// longer work to another thread): on_started_leading and on_new_leader on its loop thread,
// on_stopped_leading on whichever thread ends the term (the loop, the watchdog, or Stop's
// caller). Each on_started_leading is followed by exactly one on_stopped_leading, after it has
// returned. The Client must outlive the elector.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boost/json/object.hpp"
#include "client/client.h"

namespace muster::client {

// client-go's leaderelection.JitterFactor: renew_deadline must exceed retry_period times this,
// and a candidate waits between retry_period and retry_period * (1 + JitterFactor).
inline constexpr double kLeaderElectionJitterFactor = 1.2;

struct LeaderElectionConfig {
  // The Lease: kube-scheduler's --leader-elect-resource-namespace default; the name is required.
  std::string lease_namespace = "kube-system";
  std::string lease_name;
  // This candidate; "" for DefaultLeaderIdentity().
  std::string identity;
  // kube-scheduler's defaults. Required: lease_duration > renew_deadline >
  // retry_period * kLeaderElectionJitterFactor > 0.
  std::chrono::milliseconds lease_duration = std::chrono::seconds(15);
  std::chrono::milliseconds renew_deadline = std::chrono::seconds(10);
  std::chrono::milliseconds retry_period = std::chrono::seconds(2);
  // Required: this candidate became the leader / is no longer the leader (the renew deadline
  // passed, or Stop was called while leading; the caller must stop acting as leader at once).
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  // Optional: the lease is now held by `identity` (this candidate's included), each time the
  // holder this candidate observes changes to a non-empty one.
  std::function<void(const std::string& identity)> on_new_leader;
  // Optional: one line for each failed API call and each change of leadership (the commands
  // print them to stderr, as client-go's klog lines).
  std::function<void(const std::string& line)> log;
  // The clock that judges expiry and the renew deadline (the times written into the Lease are
  // always the system clock's). Tests inject one; default steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// "<hostname>_<random UUID>", as kube-scheduler names its candidates, so that two processes on
// one host never share an identity.
std::string DefaultLeaderIdentity();

// OK, or InvalidArgument saying which rule `config` breaks (durations, lease name, callbacks).
absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

// What a Lease's spec says (client-go's resourcelock.LeaderElectionRecord). Times are kept as
// the text the Lease holds: they are written, never used to judge expiry.
struct LeaderElectionRecord {
  std::string holder_identity;
  int64_t lease_duration_seconds = 0;
  std::string acquire_time;
  std::string renew_time;
  int64_t lease_transitions = 0;

  bool operator==(const LeaderElectionRecord&) const = default;
};

class LeaderElector {
 public:
  // InvalidArgument for a config ValidateLeaderElectionConfig refuses.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(Client& client,
                                                                LeaderElectionConfig config);
  ~LeaderElector();  // Stop(true)

  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts trying to acquire the lease on the elector's own threads. At most once.
  // ResourceExhausted when its threads cannot be made; then it has stopped (never leads).
  absl::Status Start();
  // Stops trying and renewing. When leading, calls on_stopped_leading and then, with `release`,
  // releases the lease (see above); without it the lease is left to expire, as when the process
  // dies. Waits for an API call in flight to finish (at most the transport's request timeout).
  // Idempotent.
  void Stop(bool release = true);

  // Whether this candidate holds the lease now (between on_started_leading and
  // on_stopped_leading).
  bool IsLeader() const;
  // The holder this candidate last observed ("" before the first read, or while nobody holds it).
  std::string CurrentLeader() const;
  const std::string& identity() const { return config_.identity; }

 private:
  LeaderElector(Client& client, LeaderElectionConfig config);

  using TimePoint = std::chrono::steady_clock::time_point;

  void Loop();
  void Watchdog();
  // One try: client-go's tryAcquireOrRenew. True when this candidate holds the lease after it.
  bool TryAcquireOrRenew();
  // client-go's tryRelease: the lease, still ours, written as held by nobody.
  bool TryRelease();
  void SetObserved(const LeaderElectionRecord& record);
  bool ObservedLeaseValid(TimePoint now) const;
  bool ObservedIsUs() const;
  void ReportTransition();
  // Ends the current term, if one is on: logs `why` and calls on_stopped_leading with `lock`
  // released. `lost`: ended by the elector (deadline, another holder), not by Stop. `lock` holds
  // mu_ on entry and on return.
  void EndTerm(std::unique_lock<std::mutex>& lock, bool lost, const std::string& why = "");
  // Sleeps `d` or until Stop or the loss of the term; false when the loop must end.
  bool Sleep(std::chrono::milliseconds d);
  // Whether the loop must make no more API calls (Stop, or the term was lost).
  bool Cancelled() const;
  TimePoint Now() const { return config_.clock(); }
  void Log(const std::string& line) const;

  Client& client_;
  LeaderElectionConfig config_;
  const int64_t lease_duration_seconds_;

  // The Lease as last read or written (its resourceVersion is the next update's precondition).
  // Loop thread only (and Stop after the loop ended).
  boost::json::object lease_;
  bool have_lease_ = false;
  std::string reported_leader_;  // loop thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  LeaderElectionRecord observed_;
  TimePoint observed_time_{};
  bool stopping_ = false;
  bool started_ = false;
  bool lost_ = false;  // a term ended by the elector: it tries no more
  bool leading_ = false;          // a term is on: on_started_leading was (or is being) called
  bool term_announced_ = false;   // on_started_leading of this term has returned
  TimePoint last_renew_{};        // the term's last successful acquire or renew
  std::thread loop_;
  std::thread watchdog_;
};

}  // namespace muster::client
