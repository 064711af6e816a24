#include "api/conditions.h"

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

namespace json = boost::json;

// meta.SetStatusCondition: the transition time moves only with the status.
TEST(ConditionsTest, SetStatusConditionKeepsTheTransitionTimeWhileTheStatusStays) {
  json::array conditions;
  EXPECT_TRUE(SetStatusCondition(conditions, {"DisruptionAllowed", "True", "SufficientPods", "", 1},
                                 "2024-01-01T00:00:00Z"));
  EXPECT_EQ(json::serialize(conditions),
            R"([{"type":"DisruptionAllowed","status":"True","observedGeneration":1,)"
            R"("lastTransitionTime":"2024-01-01T00:00:00Z","reason":"SufficientPods",)"
            R"("message":""}])");
  EXPECT_FALSE(SetStatusCondition(
      conditions, {"DisruptionAllowed", "True", "SufficientPods", "", 1}, "2024-01-02T00:00:00Z"));
  EXPECT_TRUE(SetStatusCondition(conditions, {"DisruptionAllowed", "True", "SufficientPods", "", 2},
                                 "2024-01-02T00:00:00Z"));
  EXPECT_EQ(FindCondition(conditions, "DisruptionAllowed")->at("lastTransitionTime"),
            "2024-01-01T00:00:00Z");
  EXPECT_TRUE(SetStatusCondition(conditions,
                                 {"DisruptionAllowed", "False", "InsufficientPods", "", 2},
                                 "2024-01-03T00:00:00Z"));
  EXPECT_EQ(FindCondition(conditions, "DisruptionAllowed")->at("lastTransitionTime"),
            "2024-01-03T00:00:00Z");
  EXPECT_EQ(conditions.size(), 1u);
  EXPECT_EQ(FindCondition(conditions, "Other"), nullptr);
}

TEST(ConditionsTest, SetPodConditionAndIsPodReady) {
  json::object pod = json::parse(R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})")
                         .as_object();
  EXPECT_TRUE(IsPodReady(pod));
  json::object& status = pod["status"].as_object();
  EXPECT_TRUE(SetPodCondition(status, "DisruptionTarget", "True", "EvictionByEvictionAPI",
                              "Eviction API: evicting", "2024-01-01T00:00:00Z"));
  EXPECT_FALSE(SetPodCondition(status, "DisruptionTarget", "True", "EvictionByEvictionAPI",
                               "Eviction API: evicting", "2024-01-02T00:00:00Z"));
  EXPECT_EQ(json::serialize(status.at("conditions").as_array().at(1)),
            R"({"type":"DisruptionTarget","status":"True","lastProbeTime":null,)"
            R"("lastTransitionTime":"2024-01-01T00:00:00Z","reason":"EvictionByEvictionAPI",)"
            R"("message":"Eviction API: evicting"})");
  EXPECT_TRUE(SetPodCondition(status, "Ready", "False", "", "", "2024-01-02T00:00:00Z"));
  EXPECT_FALSE(IsPodReady(pod));
  EXPECT_FALSE(IsPodReady(json::object()));
}

}  // namespace
}  // namespace muster::api
