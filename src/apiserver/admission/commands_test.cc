#include "apiserver/admission/admission_test_util.h"

// Volcano Command admission (commands.cc): what `kubectl create -f command.yaml` is told when the
// Command could never be carried out.

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

const ResourceInfo& Commands() { return Res("bus.volcano.sh", "v1alpha1", "commands"); }

class CommandAdmissionTest : public AdmissionTest {
 protected:
  void SetUp() override {
    AdmissionTest::SetUp();
    store_.Put(Jobs(), Obj(R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",
        "metadata":{"name":"train","namespace":"default","uid":"job-uid"},"spec":{}})"));
    // The fixture's queues carry no uid; this one does.
    store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
        "metadata":{"name":"team","uid":"queue-uid"},"spec":{"weight":1},
        "status":{"state":"Open"}})"));
  }

  // A Command as vcctl makes it: the target is the controller reference of the object.
  static json::object Command(std::string_view action, std::string_view kind,
                              std::string_view name, std::string_view uid) {
    const std::string_view api_version =
        kind == "Queue" ? "scheduling.volcano.sh/v1beta1" : "batch.volcano.sh/v1alpha1";
    return Obj(fmt::format(R"({{"apiVersion":"bus.volcano.sh/v1alpha1","kind":"Command",
        "metadata":{{"name":"cmd","namespace":"default"}},"action":"{}",
        "target":{{"apiVersion":"{}","kind":"{}","name":"{}","uid":"{}","controller":true}}}})",
                           action, api_version, kind, name, uid));
  }

  // The refusal's message; "" when admitted.
  std::string Refusal(json::object command) {
    std::optional<ApiError> err = Create(Commands(), command);
    if (!err) return "";
    EXPECT_EQ(err->code, 422) << err->message;
    return err->message;
  }
};

TEST_F(CommandAdmissionTest, VcctlsCommandsForAJobAndAQueueAreAdmitted) {
  for (std::string_view action :
       {"AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob"}) {
    EXPECT_EQ(Refusal(Command(action, "Job", "train", "job-uid")), "") << action;
  }
  for (std::string_view action : {"OpenQueue", "CloseQueue"}) {
    EXPECT_EQ(Refusal(Command(action, "Queue", "team", "queue-uid")), "") << action;
  }
}

TEST_F(CommandAdmissionTest, AMissingTargetIsRefusedNamingTheField) {
  std::optional<ApiError> err = [&] {
    json::object command = Command("AbortJob", "Job", "nope", "job-uid");
    return Create(Commands(), command);
  }();
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->reason, "Invalid");
  EXPECT_EQ(err->message,
            "Command.bus.volcano.sh \"cmd\" is invalid: target.name: Not found: \"nope\"");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].field, "target.name");
  EXPECT_EQ(err->causes[0].reason, "FieldValueNotFound");

  EXPECT_EQ(Refusal(Command("CloseQueue", "Queue", "nope", "queue-uid")),
            "Command.bus.volcano.sh \"cmd\" is invalid: target.name: Not found: \"nope\"");
  // A Job is looked up in the Command's own namespace.
  json::object elsewhere = Command("AbortJob", "Job", "train", "job-uid");
  elsewhere["metadata"].as_object()["namespace"] = "other";
  EXPECT_THAT(Refusal(elsewhere), HasSubstr("target.name: Not found: \"train\""));
}

TEST_F(CommandAdmissionTest, ATargetMadeAgainUnderItsNameIsAnotherObject) {
  EXPECT_EQ(Refusal(Command("AbortJob", "Job", "train", "old-uid")),
            "Command.bus.volcano.sh \"cmd\" is invalid: target.uid: Invalid value: \"old-uid\": "
            "Job default/train has uid job-uid");
}

TEST_F(CommandAdmissionTest, TheActionMustBeOneTheTargetsKindTakes) {
  EXPECT_EQ(Refusal(Command("CloseQueue", "Job", "train", "job-uid")),
            "Command.bus.volcano.sh \"cmd\" is invalid: action: Unsupported value: "
            "\"CloseQueue\": supported values: \"AbortJob\", \"CompleteJob\", \"RestartJob\", "
            "\"ResumeJob\", \"TerminateJob\"");
  EXPECT_EQ(Refusal(Command("AbortJob", "Queue", "team", "queue-uid")),
            "Command.bus.volcano.sh \"cmd\" is invalid: action: Unsupported value: "
            "\"AbortJob\": supported values: \"CloseQueue\", \"OpenQueue\"");
  // Internal actions, and those that need a task or pod a Command cannot name.
  for (std::string_view action : {"SyncJob", "RestartTask", "RestartPod", "Suspend"}) {
    EXPECT_THAT(Refusal(Command(action, "Job", "train", "job-uid")),
                HasSubstr("action: Unsupported value")) << action;
  }
  json::object no_action = Command("", "Job", "train", "job-uid");
  no_action.erase("action");
  EXPECT_EQ(Refusal(no_action),
            "Command.bus.volcano.sh \"cmd\" is invalid: action: Required value");
}

TEST_F(CommandAdmissionTest, TheTargetMustBeAVolcanoJobOrQueueNamedInFull) {
  json::object pod = Command("AbortJob", "Pod", "train", "job-uid");
  pod["target"].as_object()["apiVersion"] = "v1";
  EXPECT_EQ(Refusal(pod),
            "Command.bus.volcano.sh \"cmd\" is invalid: target.kind: Unsupported value: \"Pod\": "
            "supported values: \"Job\", \"Queue\"");
  json::object batch_job = Command("AbortJob", "Job", "train", "job-uid");
  batch_job["target"].as_object()["apiVersion"] = "batch/v1";
  EXPECT_EQ(Refusal(batch_job),
            "Command.bus.volcano.sh \"cmd\" is invalid: target.apiVersion: Unsupported value: "
            "\"batch/v1\": supported values: \"batch.volcano.sh/v1alpha1\"");
  json::object no_uid = Command("AbortJob", "Job", "train", "job-uid");
  no_uid["target"].as_object().erase("uid");
  EXPECT_EQ(Refusal(no_uid),
            "Command.bus.volcano.sh \"cmd\" is invalid: target.uid: Required value");
  json::object no_target = Command("AbortJob", "Job", "train", "job-uid");
  no_target.erase("target");
  EXPECT_EQ(Refusal(no_target),
            "Command.bus.volcano.sh \"cmd\" is invalid: target: Required value: the Job or Queue "
            "the action is for");
}

TEST_F(CommandAdmissionTest, MistypedFieldsAreRefusedAsTheCrdSchemaDoes) {
  json::object command = Command("AbortJob", "Job", "train", "job-uid");
  command["target"] = "train";
  std::optional<ApiError> err = Create(Commands(), command);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_THAT(err->message, HasSubstr("target"));
}

// The target may be gone by the time a stored Command is changed: only a new one is checked
// against what exists.
TEST_F(CommandAdmissionTest, AnUpdateIsNotCheckedAgainstTheTarget) {
  json::object old = Command("AbortJob", "Job", "gone", "job-uid");
  json::object changed = old;
  changed["reason"] = "Manual";
  std::optional<ApiError> err = Update(Commands(), old, changed);
  EXPECT_FALSE(err) << err->message;
}

}  // namespace
}  // namespace muster::apiserver::admission_test
