#include "controller/job_pod_cache.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

PodInfo Pod(std::string name, std::string uid, std::string owner_uid, std::string phase) {
  PodInfo pod;
  pod.name = std::move(name);
  pod.uid = std::move(uid);
  pod.owner_uid = std::move(owner_uid);
  pod.phase = std::move(phase);
  pod.task = "worker";
  pod.version = 0;
  return pod;
}

std::vector<std::string> Names(const std::vector<PodInfo>& pods) {
  std::vector<std::string> out;
  for (const PodInfo& p : pods) out.push_back(p.name + "/" + p.uid + "/" + p.phase);
  return out;
}

// The resubmit: "ns/again" ran as job uid j1 and left two Succeeded pods; the Job was deleted
// and made again as j2 before they were collected.
TEST(JobPodCacheTest, AJobMadeAgainUnderItsNameDoesNotSeeThePodsTheDeletedOneLeft) {
  JobPodCache cache;
  cache.SetJobUid("ns/again", "j1");
  cache.Upsert("ns/again", Pod("again-worker-0", "p1", "j1", "Succeeded"), 10);
  cache.Upsert("ns/again", Pod("again-worker-1", "p2", "j1", "Succeeded"), 11);
  EXPECT_THAT(Names(cache.PodsOf("ns/again", "j1")),
              ElementsAre("again-worker-0/p1/Succeeded", "again-worker-1/p2/Succeeded"));

  cache.ForgetJob("ns/again", "j1");
  cache.SetJobUid("ns/again", "j2");
  EXPECT_THAT(cache.PodsOf("ns/again", "j2"), IsEmpty());
  EXPECT_FALSE(cache.OfCurrentJob("ns/again", Pod("again-worker-0", "p1", "j1", "Succeeded")));
  EXPECT_TRUE(cache.OfCurrentJob("ns/again", Pod("again-worker-0", "p3", "j2", "Pending")));

  // The old pod goes and the new one comes under its name; a late delete of the old one (its
  // uid) leaves the new one cached.
  cache.Upsert("ns/again", Pod("again-worker-0", "p3", "j2", "Pending"), 20);
  cache.Erase("ns/again", Pod("again-worker-0", "p1", "j1", "Succeeded"));
  EXPECT_THAT(Names(cache.PodsOf("ns/again", "j2")), ElementsAre("again-worker-0/p3/Pending"));
  cache.Erase("ns/again", Pod("again-worker-0", "p3", "j2", "Pending"));
  EXPECT_THAT(cache.PodsOf("ns/again", "j2"), IsEmpty());
}

TEST(JobPodCacheTest, ForgettingTheOldUidKeepsTheNewJobs) {
  JobPodCache cache;
  cache.SetJobUid("ns/j", "new");
  cache.ForgetJob("ns/j", "old");
  EXPECT_TRUE(cache.OfCurrentJob("ns/j", Pod("j-worker-0", "p", "new", "Running")));
  cache.ForgetJob("ns/j", "new");
  EXPECT_FALSE(cache.OfCurrentJob("ns/j", Pod("j-worker-0", "p", "new", "Running")));
  // A pod without a controlling Job is no Job's.
  cache.SetJobUid("ns/j", "");
  EXPECT_FALSE(cache.OfCurrentJob("ns/j", Pod("j-worker-0", "p", "", "Running")));
}

// A create's response can come after the watch delivered the pod's later version.
TEST(JobPodCacheTest, AnOlderRevisionDoesNotReplaceANewerOne) {
  JobPodCache cache;
  cache.Upsert("ns/j", Pod("j-worker-0", "p", "u", "Running"), 12);
  cache.Upsert("ns/j", Pod("j-worker-0", "p", "u", "Pending"), 11);
  EXPECT_THAT(Names(cache.PodsOf("ns/j", "u")), ElementsAre("j-worker-0/p/Running"));
  cache.Upsert("ns/j", Pod("j-worker-0", "p", "u", "Succeeded"), 13);
  EXPECT_THAT(Names(cache.PodsOf("ns/j", "u")), ElementsAre("j-worker-0/p/Succeeded"));
  cache.Upsert("ns/j", Pod("j-worker-0", "p", "u", "Failed"), std::nullopt);
  EXPECT_THAT(Names(cache.PodsOf("ns/j", "u")), ElementsAre("j-worker-0/p/Failed"));
}

}  // namespace
}  // namespace muster::controller
