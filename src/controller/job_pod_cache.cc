#include "controller/job_pod_cache.h"

namespace muster::controller {

void JobPodCache::SetJobUid(const std::string& key, const std::string& uid) {
  std::lock_guard lock(mu_);
  job_uids_[key] = uid;
}

void JobPodCache::ForgetJob(const std::string& key, const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = job_uids_.find(key);
  if (it != job_uids_.end() && it->second == uid) job_uids_.erase(it);
}

bool JobPodCache::OfCurrentJob(const std::string& key, const PodInfo& pod) const {
  std::lock_guard lock(mu_);
  auto it = job_uids_.find(key);
  return it != job_uids_.end() && !pod.owner_uid.empty() && it->second == pod.owner_uid;
}

void JobPodCache::Upsert(const std::string& key, const PodInfo& pod,
                         std::optional<int64_t> revision) {
  std::lock_guard lock(mu_);
  Entry& entry = pods_[key][pod.name];
  if (entry.revision && revision && *revision < *entry.revision) return;
  entry.info = pod;
  entry.revision = revision;
}

void JobPodCache::Erase(const std::string& key, const PodInfo& pod) {
  std::lock_guard lock(mu_);
  auto job = pods_.find(key);
  if (job == pods_.end()) return;
  auto entry = job->second.find(pod.name);
  if (entry != job->second.end() && entry->second.info.uid == pod.uid) job->second.erase(entry);
  if (job->second.empty()) pods_.erase(job);
}

void JobPodCache::ForEachPodOf(const std::string& key, const std::string& uid,
                               const std::function<void(const PodInfo&)>& f) const {
  std::lock_guard lock(mu_);
  auto job = pods_.find(key);
  if (job == pods_.end()) return;
  for (const auto& [name, entry] : job->second) {
    if (!uid.empty() && entry.info.owner_uid == uid) f(entry.info);
  }
}

std::vector<PodInfo> JobPodCache::PodsOf(const std::string& key, const std::string& uid) const {
  std::vector<PodInfo> out;
  ForEachPodOf(key, uid, [&out](const PodInfo& pod) { out.push_back(pod); });
  return out;
}

}  // namespace muster::controller
