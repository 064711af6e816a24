#include "scheduler/changes.h"

#include <gtest/gtest.h>

#include "boost/json/parse.hpp"

namespace muster::scheduler {
namespace {

namespace json = boost::json;

json::object Obj(const char* text) { return json::parse(text).as_object(); }

constexpr ChangeEffect kNothing{false, Helps::kNobody};
constexpr ChangeEffect kWakeOnly{true, Helps::kNobody};
constexpr ChangeEffect kItsGang{true, Helps::kItsGang};
constexpr ChangeEffect kEveryone{true, Helps::kEveryone};

TEST(ChangesTest, Pods) {
  json::object pending = Obj(R"({"metadata":{"name":"p","annotations":{"a":"1"}},
      "spec":{"schedulerName":"volcano"},"status":{"phase":"Pending"}})");
  EXPECT_EQ(PodChange(nullptr, &pending), kItsGang);
  EXPECT_EQ(PodChange(&pending, nullptr), kEveryone);
  EXPECT_EQ(PodChange(&pending, &pending), kNothing);

  // The scheduler's own condition write is nothing to act on.
  json::object with_condition = pending;
  with_condition["status"].as_object()["conditions"] =
      json::parse(R"([{"type":"PodScheduled","status":"False","message":"0/2 nodes"}])");
  EXPECT_EQ(PodChange(&pending, &with_condition), kNothing);

  json::object annotated = pending;
  annotated["metadata"].as_object()["annotations"] =
      json::parse(R"({"a":"1","scheduling.k8s.io/group-name":"pg"})");
  EXPECT_EQ(PodChange(&pending, &annotated), kItsGang);

  json::object bound = pending;
  bound["spec"].as_object()["nodeName"] = "n1";
  EXPECT_EQ(PodChange(&pending, &bound), kItsGang);

  json::object running = bound;
  running["status"].as_object()["phase"] = "Running";
  EXPECT_EQ(PodChange(&bound, &running), kWakeOnly);

  json::object succeeded = running;
  succeeded["status"].as_object()["phase"] = "Succeeded";
  EXPECT_EQ(PodChange(&running, &succeeded), kEveryone);

  json::object terminating = running;
  terminating["metadata"].as_object()["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_EQ(PodChange(&running, &terminating), kEveryone);
}

TEST(ChangesTest, Nodes) {
  json::object node = Obj(R"({"metadata":{"name":"n1","labels":{"zone":"a"}},
      "status":{"allocatable":{"nvidia.com/gpu":"1"},
                "conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"t1"}]}})");
  EXPECT_EQ(NodeChange(nullptr, &node), kEveryone);
  EXPECT_EQ(NodeChange(&node, nullptr), kWakeOnly);

  json::object heartbeat = Obj(R"({"metadata":{"name":"n1","labels":{"zone":"a"}},
      "status":{"allocatable":{"nvidia.com/gpu":"1"},
                "conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"t2"}]}})");
  EXPECT_EQ(NodeChange(&node, &heartbeat), kNothing);

  json::object more_gpus = node;
  more_gpus["status"].as_object()["allocatable"] = json::parse(R"({"nvidia.com/gpu":"2"})");
  EXPECT_EQ(NodeChange(&node, &more_gpus), kEveryone);

  json::object not_ready = Obj(R"({"metadata":{"name":"n1","labels":{"zone":"a"}},
      "status":{"allocatable":{"nvidia.com/gpu":"1"},
                "conditions":[{"type":"Ready","status":"False"}]}})");
  EXPECT_EQ(NodeChange(&not_ready, &node), kEveryone);

  json::object tainted = node;
  tainted["spec"] = json::parse(R"({"taints":[{"key":"k","effect":"NoSchedule"}]})");
  EXPECT_EQ(NodeChange(&tainted, &node), kEveryone);
}

TEST(ChangesTest, PodGroupsQueuesAndPriorityClasses) {
  json::object pg = Obj(R"({"metadata":{"name":"pg"},"spec":{"minMember":2},
      "status":{"phase":"Pending"}})");
  json::object admitted = pg;
  admitted["status"].as_object()["phase"] = "Inqueue";
  EXPECT_EQ(PodGroupChange(&pg, &admitted), kNothing);
  json::object bigger = pg;
  bigger["spec"].as_object()["minMember"] = 3;
  EXPECT_EQ(PodGroupChange(&pg, &bigger), kItsGang);
  EXPECT_EQ(PodGroupChange(nullptr, &pg), kItsGang);
  // The scheduler's own estimate annotations (estimates.h) wake no cycle; another annotation does.
  json::object estimated = pg;
  estimated["metadata"].as_object()["annotations"] = json::object{
      {"muster.dev/estimated-start", "2027-01-15T08:09:00Z"},
      {"muster.dev/wait-reason", "waits for admission in queue q"}};
  EXPECT_EQ(PodGroupChange(&pg, &estimated), kNothing);
  json::object annotated = estimated;
  annotated["metadata"].as_object()["annotations"].as_object()["team"] = "a";
  EXPECT_EQ(PodGroupChange(&estimated, &annotated), kItsGang);

  json::object q =
      Obj(R"({"metadata":{"name":"q"},"spec":{"weight":1},"status":{"state":"Open"}})");
  json::object counted = q;
  counted["status"].as_object()["running"] = 3;
  EXPECT_EQ(QueueChange(&q, &counted), kNothing);
  json::object heavier = q;
  heavier["spec"].as_object()["weight"] = 2;
  EXPECT_EQ(QueueChange(&q, &heavier), kEveryone);
  json::object closed = q;
  closed["status"].as_object()["state"] = "Closed";
  EXPECT_EQ(QueueChange(&q, &closed), kEveryone);

  json::object pc = Obj(R"({"metadata":{"name":"high"},"value":1000})");
  json::object relabelled = Obj(R"({"metadata":{"name":"high","labels":{"a":"b"}},"value":1000})");
  EXPECT_EQ(PriorityClassChange(&pc, &relabelled), kNothing);
  json::object higher = Obj(R"({"metadata":{"name":"high"},"value":2000})");
  EXPECT_EQ(PriorityClassChange(&pc, &higher), kEveryone);
}

TEST(ChangesTest, AHyperNodeWakesTheGangsWhenItsMembersChange) {
  json::object rack = Obj(R"({"metadata":{"name":"rack-1"},"spec":{"tier":1,"members":[
      {"type":"Node","selector":{"exactMatch":{"name":"n1"}}}]},"status":{"nodeCount":1}})");
  EXPECT_EQ(HyperNodeChange(nullptr, &rack), kEveryone);
  EXPECT_EQ(HyperNodeChange(&rack, nullptr), kEveryone);
  json::object counted = rack;
  counted["status"].as_object()["nodeCount"] = 2;
  EXPECT_EQ(HyperNodeChange(&rack, &counted), kNothing);
  json::object grown = rack;
  grown["spec"].as_object()["members"].as_array().push_back(
      Obj(R"({"type":"Node","selector":{"exactMatch":{"name":"n2"}}})"));
  EXPECT_EQ(HyperNodeChange(&rack, &grown), kEveryone);
}

}  // namespace
}  // namespace muster::scheduler
