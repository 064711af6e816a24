#pragma once

// The job controller's cache of the pods it manages (the pods half of Volcano's
// pkg/controllers/cache): every pod whose job-name annotation names a Job, by the Job's "ns/name"
// and the pod's name, with the revision last seen; and each Job's uid as last watched. A Job
// deleted and made again under its name is another Job, and its pods are only those whose
// controller reference carries its uid: the pods a deleted run left behind (there until the API
// server collects them) are never counted for the next run.
//
// Thread-safety: every method may be called from any thread; one mutex guards the cache.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/job.h"

namespace muster::controller {

class JobPodCache {
 public:
  // The Job `key` ("ns/name") now has `uid` (a watched add or update).
  void SetJobUid(const std::string& key, const std::string& uid);
  // The Job `key` with `uid` is gone; a Job made since under the name keeps its own entry.
  void ForgetJob(const std::string& key, const std::string& uid);
  // Whether `pod` belongs to the Job that has the name `key` now.
  bool OfCurrentJob(const std::string& key, const PodInfo& pod) const;

  // Keeps the newer of what is cached and `pod`: a create's response can arrive after the watch
  // has delivered a later version of the pod (the kubelet's Running) and must not put the older
  // one back. Without a revision on either side the newest call wins.
  void Upsert(const std::string& key, const PodInfo& pod, std::optional<int64_t> revision);
  // Forgets the pod named `pod.name` if it is still the one with `pod.uid` (a pod made since
  // under the same name stays).
  void Erase(const std::string& key, const PodInfo& pod);

  // Calls `f` with each cached pod of the Job `key` whose owner's uid is `uid`, in name order,
  // under the cache's lock (`f` must not call the cache).
  void ForEachPodOf(const std::string& key, const std::string& uid,
                    const std::function<void(const PodInfo&)>& f) const;
  std::vector<PodInfo> PodsOf(const std::string& key, const std::string& uid) const;

 private:
  struct Entry {
    PodInfo info;
    std::optional<int64_t> revision;
  };
  mutable std::mutex mu_;
  std::map<std::string, std::string> job_uids_;
  std::map<std::string, std::map<std::string, Entry>> pods_;
};

}  // namespace muster::controller
