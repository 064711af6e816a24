#include "controller/command.h"

#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

Command ParsedCommand(std::string_view text) {
  return DecodeCommand(boost::json::parse(text).as_object());
}

// What `vcctl job suspend -N train` creates.
constexpr std::string_view kSuspend = R"({"apiVersion":"bus.volcano.sh/v1alpha1","kind":"Command",
    "metadata":{"name":"train-abortjob-x7k2p","namespace":"team","uid":"cmd-uid",
      "ownerReferences":[{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"train",
        "uid":"job-uid","controller":true,"blockOwnerDeletion":true}]},
    "action":"AbortJob","reason":"Maintenance","message":"node drain",
    "target":{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"train",
      "uid":"job-uid","controller":true,"blockOwnerDeletion":true}})";

TEST(CommandTest, DecodesWhatVcctlCreates) {
  Command command = ParsedCommand(kSuspend);
  EXPECT_EQ(command.ns, "team");
  EXPECT_EQ(command.name, "train-abortjob-x7k2p");
  EXPECT_EQ(command.uid, "cmd-uid");
  EXPECT_EQ(command.action, "AbortJob");
  EXPECT_EQ(command.reason, "Maintenance");
  EXPECT_EQ(command.message, "node drain");
  ASSERT_TRUE(command.target.has_value());
  EXPECT_EQ(*command.target,
            (CommandTarget{"batch.volcano.sh/v1alpha1", "Job", "train", "job-uid"}));
}

TEST(CommandTest, EachControllerTakesOnlyItsTargetsKind) {
  EXPECT_TRUE(TargetsJob(ParsedCommand(kSuspend)));
  EXPECT_FALSE(TargetsQueue(ParsedCommand(kSuspend)));

  Command close = ParsedCommand(R"({"metadata":{"name":"c","namespace":"default"},
      "action":"CloseQueue","target":{"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","name":"team","uid":"q"}})");
  EXPECT_TRUE(TargetsQueue(close));
  EXPECT_FALSE(TargetsJob(close));

  // batch/v1 Jobs, other versions, no target, a mistyped target: nobody's.
  for (std::string_view text :
       {R"({"action":"AbortJob","target":{"apiVersion":"batch/v1","kind":"Job","name":"x"}})",
        R"({"action":"CloseQueue","target":{"apiVersion":"scheduling.volcano.sh/v1alpha1",
            "kind":"Queue","name":"x"}})",
        R"({"action":"AbortJob"})", R"({"action":"AbortJob","target":"train"})"}) {
    Command command = ParsedCommand(text);
    EXPECT_FALSE(TargetsJob(command)) << text;
    EXPECT_FALSE(TargetsQueue(command)) << text;
  }
}

TEST(CommandTest, AJobsCommandIsACommandIssuedRequestWithItsAction) {
  Request request = JobCommandRequest(ParsedCommand(kSuspend));
  EXPECT_EQ(request.event, kCommandIssuedEvent);
  EXPECT_EQ(request.action, kAbortJobAction);
  EXPECT_EQ(request.task, "");
  EXPECT_EQ(request.pod, "");
  EXPECT_EQ(CommandIssuedMessage("AbortJob"),
            "Start to execute command AbortJob, and clean it up to make sure executed not more "
            "than once.");
}

}  // namespace
}  // namespace muster::controller
