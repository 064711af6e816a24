// The batch/v1 Job state machine (batch_job_state.h), after kube-controller-manager's
// pkg/controller/job (job_controller.go syncJob, manageJob, trackJobStatusAndRemoveFinalizers;
// pod_failure_policy.go; success_policy.go; backoff_utils.go; indexed_job_utils.go).

#include "controller/batch_job_state.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "api/batch_indexes.h"
#include "fmt/format.h"

namespace muster::controller {
namespace {

constexpr int64_t kMaxBackoffSeconds = 600;

bool UidListHas(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// ensureJobConditionStatus: a condition changes (and takes `now` as its transition time) only
// when its status, reason or message does; a False condition that does not exist is not added.
bool EnsureCondition(BatchJobStatus& status, const std::string& type, const std::string& value,
                     const std::string& reason, const std::string& message, int64_t now) {
  for (BatchJobCondition& c : status.conditions) {
    if (c.type != type) continue;
    if (c.status == value && c.reason == reason && c.message == message) return false;
    c.status = value;
    c.reason = reason;
    c.message = message;
    c.last_transition_time = now;
    return true;
  }
  if (value == "False") return false;
  status.conditions.push_back({type, value, reason, message, now, now});
  return true;
}

bool ExitCodeMatches(const PodFailureRule& rule, int32_t code) {
  const bool listed = std::find(rule.values.begin(), rule.values.end(), code) != rule.values.end();
  return rule.in ? listed : !listed;
}

struct Verdict {
  std::string reason;
  std::string message;
};

// The reason the pod failed the Job under a FailJob rule (kube's messages).
std::string FailJobMessage(const PodFailureRule& rule, size_t index, const BatchPod& pod,
                           const std::string& ns) {
  if (rule.on_exit_codes) {
    for (const BatchPod::Exit& e : pod.exits) {
      if (e.code == 0 || (rule.container && *rule.container != e.container)) continue;
      if (!ExitCodeMatches(rule, e.code)) continue;
      return fmt::format("Container {} for pod {}/{} failed with exit code {} matching {} rule "
                         "at index {}",
                         e.container, ns, pod.name, e.code, rule.action, index);
    }
  }
  for (const auto& [type, status] : rule.conditions) {
    for (const auto& [have_type, have_status] : pod.conditions) {
      if (have_type == type && have_status == status) {
        return fmt::format("Pod {}/{} has condition {} matching {} rule at index {}", ns, pod.name,
                           type, rule.action, index);
      }
    }
  }
  return "";
}

// Whether the pod counts as failed (isPodFailed): its phase, or being deleted before it
// succeeded unless only failed pods are replaced.
bool ConsideredFailed(const BatchJob& job, const BatchPod& pod) {
  if (pod.phase == "Failed") return true;
  if (job.replace_only_failed) return false;
  return pod.terminating && pod.phase != "Succeeded";
}

// Kube's backoff after pod failures: base * 2^(n-1) after the n-th failure in a row, capped.
std::optional<int64_t> BackoffUntil(const std::vector<const BatchPod*>& failed,
                                    int64_t last_success, int64_t base) {
  int n = 0;
  int64_t last = 0;
  for (const BatchPod* p : failed) {
    if (p->finished == 0 || p->finished <= last_success) continue;
    ++n;
    last = std::max(last, p->finished);
  }
  if (n == 0) return std::nullopt;
  int64_t delay = base;
  for (int i = 1; i < n && delay < kMaxBackoffSeconds; ++i) delay *= 2;
  return last + std::min(delay, kMaxBackoffSeconds);
}

// activePodsForRemoval's order, roughly: pods not yet running first, then not ready, then the
// newest.
std::vector<const BatchPod*> RemovalOrder(std::vector<const BatchPod*> pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const BatchPod* a, const BatchPod* b) {
    const bool a_pending = a->phase == "Pending";
    const bool b_pending = b->phase == "Pending";
    if (a_pending != b_pending) return a_pending;
    if (a->ready != b->ready) return !a->ready;
    if (a->index.value_or(-1) != b->index.value_or(-1)) {
      return a->index.value_or(-1) > b->index.value_or(-1);
    }
    return a->created > b->created;
  });
  return pods;
}

}  // namespace

std::optional<size_t> MatchPodFailureRule(const std::vector<PodFailureRule>& rules,
                                          const BatchPod& pod) {
  for (size_t i = 0; i < rules.size(); ++i) {
    const PodFailureRule& rule = rules[i];
    if (rule.on_exit_codes) {
      for (const BatchPod::Exit& e : pod.exits) {
        if (e.code == 0 || (rule.container && *rule.container != e.container)) continue;
        if (ExitCodeMatches(rule, e.code)) return i;
      }
    }
    for (const auto& [type, status] : rule.conditions) {
      for (const auto& [have_type, have_status] : pod.conditions) {
        if (have_type == type && have_status == status) return i;
      }
    }
  }
  return std::nullopt;
}

BatchJobPlan PlanBatchJob(const BatchJobSnapshot& snapshot) {
  const BatchJob& job = snapshot.job;
  const int64_t now = snapshot.now;
  BatchJobPlan plan;
  plan.status = job.status;
  std::vector<const BatchPod*> pods;
  for (const BatchPod& p : snapshot.pods) pods.push_back(&p);
  std::sort(pods.begin(), pods.end(),
            [](const BatchPod* a, const BatchPod* b) { return a->name < b->name; });

  // A Job being deleted or finished only lets its pods go.
  if (job.deleting || job.Finished()) {
    for (const BatchPod* p : pods) {
      if (p->tracked) plan.remove_finalizers.push_back(p->name);
      if (!job.deleting && !p->Finished() && !p->terminating) plan.delete_pods.push_back(p->name);
    }
    const BatchJobCondition* done = job.status.Find(job.status.IsTrue(kJobComplete) ? kJobComplete
                                                                               : kJobFailed);
    if (!job.deleting && done != nullptr && job.ttl_seconds_after_finished) {
      plan.delete_job_at = done->last_transition_time + *job.ttl_seconds_after_finished;
    }
    return plan;
  }

  const int32_t completions = job.completions.value_or(0);
  BatchJobStatus interim = job.status;
  std::set<int32_t> completed;
  std::set<int32_t> failed_indexes;
  if (job.indexed) {
    completed = api::ParseIndexes(job.status.completed_indexes, completions)
                    .value_or(std::set<int32_t>{});
    failed_indexes = api::ParseIndexes(job.status.failed_indexes.value_or(""), completions)
                         .value_or(std::set<int32_t>{});
  }
  std::vector<const BatchPod*> active;
  std::vector<const BatchPod*> terminating;
  std::vector<const BatchPod*> failed_pods;
  std::map<int32_t, int32_t> index_failures;  // failures of each index so far
  int64_t last_success = 0;
  int32_t restarts = 0;
  std::optional<Verdict> fail_job;
  for (const BatchPod* p : pods) {
    const bool index_ok = !job.indexed || (p->index && *p->index >= 0 && *p->index < completions);
    if (!p->Finished() && !p->terminating) {
      active.push_back(p);
      if (job.restart_policy == "OnFailure") restarts += p->restarts;
      continue;
    }
    if (!p->Finished()) terminating.push_back(p);
    if (p->phase == "Succeeded") {
      last_success = std::max(last_success, p->finished);
      if (job.indexed && index_ok) completed.insert(*p->index);
      if (p->tracked && !UidListHas(interim.uncounted_succeeded, p->uid)) {
        interim.uncounted_succeeded.push_back(p->uid);
      }
    } else if (ConsideredFailed(job, *p)) {
      std::string action = "Count";
      std::optional<size_t> rule;
      if (job.has_pod_failure_policy && p->phase == "Failed") {
        rule = MatchPodFailureRule(job.pod_failure_rules, *p);
        if (rule) action = job.pod_failure_rules[*rule].action;
      }
      if (action != "Ignore") {
        failed_pods.push_back(p);
        if (job.indexed && index_ok) {
          int32_t& n = index_failures[*p->index];
          n = std::max(n, p->index_failures + 1);
        }
      }
      // An index fails for good on FailIndex or past backoffLimitPerIndex (a set: seeing the
      // same pod again changes nothing).
      if (action != "Ignore" && job.indexed && index_ok && job.backoff_limit_per_index &&
          (action == "FailIndex" || p->index_failures + 1 > *job.backoff_limit_per_index)) {
        failed_indexes.insert(*p->index);
      }
      const bool new_failure = p->tracked && !UidListHas(interim.uncounted_failed, p->uid);
      if (new_failure && action != "Ignore") {
        interim.uncounted_failed.push_back(p->uid);
        if (action == "FailJob" && !fail_job) {
          fail_job = Verdict{"PodFailurePolicy",
                             FailJobMessage(job.pod_failure_rules[*rule], *rule, *p, job.ns)};
        }
      }
    }
    if (p->tracked) plan.remove_finalizers.push_back(p->name);
  }
  if (interim != job.status) plan.interim_status = interim;

  // The counters take every uncounted pod once the finalizers are off.
  BatchJobStatus& st = plan.status;
  st = interim;
  st.failed += static_cast<int32_t>(interim.uncounted_failed.size());
  st.succeeded += static_cast<int32_t>(interim.uncounted_succeeded.size());
  st.uncounted_failed.clear();
  st.uncounted_succeeded.clear();
  if (job.indexed) {
    st.succeeded = static_cast<int32_t>(completed.size());
    st.completed_indexes = api::FormatIndexes(completed);
    if (job.backoff_limit_per_index) st.failed_indexes = api::FormatIndexes(failed_indexes);
  }

  // The terminal verdicts, once reached, stand.
  std::optional<Verdict> failure;
  std::optional<Verdict> success;
  if (const BatchJobCondition* c = st.Find(kJobFailureTarget); c != nullptr && c->status == "True") {
    failure = Verdict{c->reason, c->message};
  } else if (const BatchJobCondition* c2 = st.Find(kJobSuccessCriteriaMet);
             c2 != nullptr && c2->status == "True") {
    success = Verdict{c2->reason, c2->message};
  }
  if (!failure && !success) {
    if (fail_job) {
      failure = fail_job;
    } else if (job.backoff_limit_per_index) {
      if (job.max_failed_indexes &&
          static_cast<int32_t>(failed_indexes.size()) > *job.max_failed_indexes) {
        failure = Verdict{"MaxFailedIndexesExceeded",
                          "Job has exceeded the specified maximal number of failed indexes"};
      } else if (!failed_indexes.empty() &&
                 static_cast<int32_t>(completed.size() + failed_indexes.size()) >= completions) {
        failure = Verdict{"FailedIndexes", "Job has failed indexes"};
      }
    } else if (st.failed + restarts > job.backoff_limit) {
      failure = Verdict{"BackoffLimitExceeded", "Job has reached the specified backoff limit"};
    }
    if (!failure && !job.suspend && job.active_deadline_seconds && st.start_time != 0 &&
        now - st.start_time >= *job.active_deadline_seconds) {
      failure = Verdict{"DeadlineExceeded", "Job was active longer than specified deadline"};
    }
  }
  if (!failure && !success) {
    for (size_t i = 0; i < job.success_rules.size() && job.indexed; ++i) {
      const SuccessRule& rule = job.success_rules[i];
      size_t matched = completed.size();
      bool all = true;
      if (rule.indexes) {
        matched = 0;
        for (int32_t idx : *rule.indexes) {
          if (completed.contains(idx)) {
            ++matched;
          } else {
            all = false;
          }
        }
      }
      const bool ok = rule.count ? static_cast<int32_t>(matched) >= *rule.count : all;
      if (ok && (rule.indexes || rule.count)) {
        success = Verdict{"SuccessPolicy", fmt::format("Matched rules at index {}", i)};
        break;
      }
    }
    bool reached = false;
    if (job.indexed) {
      reached = completions > 0 && static_cast<int32_t>(completed.size()) >= completions;
    } else if (job.completions) {
      reached = st.succeeded >= completions;
    } else {
      reached = st.succeeded > 0 && active.empty();
    }
    if (!success && reached) {
      success = Verdict{"CompletionsReached", "Reached expected number of succeeded pods"};
    }
  }

  int32_t deleting = 0;
  auto delete_pod = [&](const BatchPod* p) {
    plan.delete_pods.push_back(p->name);
    if (p->tracked && !UidListHas(plan.remove_finalizers, p->name)) {
      plan.remove_finalizers.push_back(p->name);
    }
    ++deleting;
  };
  std::optional<int64_t> requeue;
  auto requeue_at = [&](int64_t t) { requeue = requeue ? std::min(*requeue, t) : t; };

  if (failure || success) {
    const Verdict& v = failure ? *failure : *success;
    EnsureCondition(st, failure ? kJobFailureTarget : kJobSuccessCriteriaMet, "True", v.reason,
                    v.message, now);
    for (const BatchPod* p : active) delete_pod(p);
    if (terminating.empty() && active.empty()) {
      if (failure) {
        EnsureCondition(st, kJobFailed, "True", v.reason, v.message, now);
        plan.events.push_back({"Warning", v.reason, v.message});
      } else {
        EnsureCondition(st, kJobComplete, "True", v.reason, v.message, now);
        st.completion_time = now;
        plan.events.push_back({"Normal", "Completed", "Job completed"});
      }
      if (job.ttl_seconds_after_finished) {
        plan.delete_job_at = now + *job.ttl_seconds_after_finished;
      }
    }
  } else if (job.suspend) {
    for (const BatchPod* p : active) delete_pod(p);
    if (EnsureCondition(st, kJobSuspended, "True", "JobSuspended", "Job suspended", now)) {
      plan.events.push_back({"Normal", "Suspended", "Job suspended"});
    }
  } else {
    if (EnsureCondition(st, kJobSuspended, "False", "JobResumed", "Job resumed", now)) {
      st.start_time = now;
      plan.events.push_back({"Normal", "Resumed", "Job resumed"});
    }
    if (st.start_time == 0) st.start_time = now;
    if (job.active_deadline_seconds) requeue_at(st.start_time + *job.active_deadline_seconds);

    // manageJob.
    const int32_t blocking = job.replace_only_failed ? static_cast<int32_t>(terminating.size()) : 0;
    int32_t want = job.parallelism;
    if (job.indexed) {
      const int32_t left = completions - static_cast<int32_t>(completed.size() +
                                                             failed_indexes.size());
      want = std::clamp(left, 0, job.parallelism);
    } else if (job.completions) {
      want = std::clamp(completions - st.succeeded, 0, job.parallelism);
    } else if (st.succeeded > 0) {
      want = static_cast<int32_t>(active.size());
    }
    std::vector<const BatchPod*> keep;
    std::set<int32_t> busy;
    if (job.indexed) {
      // Pods whose index is out of range, done or taken by another pod go.
      for (const BatchPod* p : active) {
        const bool valid = p->index && *p->index >= 0 && *p->index < completions &&
                           !completed.contains(*p->index) && !failed_indexes.contains(*p->index);
        if (!valid || !busy.insert(*p->index).second) {
          delete_pod(p);
        } else {
          keep.push_back(p);
        }
      }
      if (job.replace_only_failed) {
        for (const BatchPod* p : terminating) {
          if (p->index) busy.insert(*p->index);
        }
      }
    } else {
      keep = active;
    }
    const int32_t kept = static_cast<int32_t>(keep.size());
    if (kept > want) {
      std::vector<const BatchPod*> order = RemovalOrder(keep);
      for (int32_t i = 0; i < kept - want; ++i) delete_pod(order[static_cast<size_t>(i)]);
    } else if (kept + blocking < want) {
      int32_t missing = want - kept - blocking;
      if (job.indexed) {
        for (int32_t idx = 0; idx < completions && missing > 0; ++idx) {
          if (completed.contains(idx) || failed_indexes.contains(idx) || busy.contains(idx)) {
            continue;
          }
          std::vector<const BatchPod*> of_index;
          for (const BatchPod* p : failed_pods) {
            if (p->index == idx) of_index.push_back(p);
          }
          if (std::optional<int64_t> until =
                  BackoffUntil(of_index, 0, snapshot.backoff_base_seconds);
              until && *until > now) {
            requeue_at(*until);
            continue;
          }
          const auto failures = index_failures.find(idx);
          plan.create_pods.push_back(
              {idx, failures == index_failures.end() ? 0 : failures->second});
          --missing;
        }
      } else {
        std::optional<int64_t> until =
            BackoffUntil(failed_pods, last_success, snapshot.backoff_base_seconds);
        if (until && *until > now) {
          requeue_at(*until);
        } else {
          for (int32_t i = 0; i < missing; ++i) plan.create_pods.push_back({});
        }
      }
    }
  }

  const int32_t still_active = static_cast<int32_t>(active.size()) - deleting;
  st.active = still_active + static_cast<int32_t>(plan.create_pods.size());
  int32_t ready = 0;
  for (const BatchPod* p : active) {
    if (p->ready && !UidListHas(plan.delete_pods, p->name)) ++ready;
  }
  st.ready = ready;
  st.terminating = static_cast<int32_t>(terminating.size()) + deleting;
  if (st.IsTrue(kJobComplete) || st.IsTrue(kJobFailed)) {
    st.active = 0;
    st.ready = 0;
    st.terminating = 0;
  }
  plan.status_changed = st != job.status;
  plan.requeue_at = requeue;
  return plan;
}

}  // namespace muster::controller
