#include "apiserver/admission/kinds.h"

// Volcano Commands (bus.volcano.sh/v1alpha1): the CRD schema's types and required target fields
// (config/crd/volcano/bases/bus.volcano.sh_commands.yaml), then muster's own checks. Volcano has
// no webhook for Commands: its controllers take any Command whose target is a Job or a Queue and
// delete it, so a Command naming an action the target's controller ignores, or a target that does
// not exist, is silently dropped. muster refuses those at once, with the field named, so that
// `kubectl create -f command.yaml` says what is wrong:
//   - the target's kind: a Volcano Job (batch.volcano.sh/v1alpha1) or Queue
//     (scheduling.volcano.sh/v1beta1);
//   - the action: one a user may give that kind (bus/v1alpha1 actions.go; RestartTask,
//     RestartPod and RestartPartition need a task or pod a Command cannot name, and SyncJob,
//     EnqueueJob and SyncQueue are internal);
//   - on create, the target exists (a Job in the Command's namespace, a cluster-scoped Queue)
//     and has the uid the Command names.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

struct CommandTargetKind {
  std::string_view api_version;
  std::string_view kind;
  std::string_view store_resource;  // where the target is stored
  bool namespaced;
  std::vector<std::string_view> actions;  // sorted, as NotSupported lists them
};

const std::vector<CommandTargetKind>& CommandTargetKinds() {
  static const auto* const kinds = new std::vector<CommandTargetKind>{
      {"batch.volcano.sh/v1alpha1",
       "Job",
       "jobs.batch.volcano.sh",
       true,
       {"AbortJob", "CompleteJob", "RestartJob", "ResumeJob", "TerminateJob"}},
      {"scheduling.volcano.sh/v1beta1",
       "Queue",
       "queues.scheduling.volcano.sh",
       false,
       {"CloseQueue", "OpenQueue"}},
  };
  return *kinds;
}

// The target's fields the CRD requires (an OwnerReference's identity); "" when absent.
struct CommandTargetRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
};

}  // namespace

std::optional<ApiError> AdmitCommand(Context& c) {
  std::optional<std::string> action = c.reader.Str(c.obj, "action", "action");
  c.reader.Str(c.obj, "reason", "reason");
  c.reader.Str(c.obj, "message", "message");
  json::object* target = c.reader.Obj(c.obj, "target", "target", "v1.OwnerReference");
  CommandTargetRef ref;
  if (target != nullptr) {
    ref.api_version = c.reader.StrOr(*target, "apiVersion", "target.apiVersion");
    ref.kind = c.reader.StrOr(*target, "kind", "target.kind");
    ref.name = c.reader.StrOr(*target, "name", "target.name");
    ref.uid = c.reader.StrOr(*target, "uid", "target.uid");
    c.reader.Bool(*target, "controller", "target.controller");
    c.reader.Bool(*target, "blockOwnerDeletion", "target.blockOwnerDeletion");
  }
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;

  if (target == nullptr) {
    c.errs.Required("target", "the Job or Queue the action is for");
  } else {
    // The CRD's `required`: an OwnerReference's identity.
    if (ref.api_version.empty()) c.errs.Required("target.apiVersion");
    if (ref.kind.empty()) c.errs.Required("target.kind");
    if (ref.name.empty()) c.errs.Required("target.name");
    if (ref.uid.empty()) c.errs.Required("target.uid");
  }
  const CommandTargetKind* kind = nullptr;
  for (const CommandTargetKind& k : CommandTargetKinds()) {
    if (k.kind == ref.kind) kind = &k;
  }
  if (kind == nullptr && !ref.kind.empty()) {
    c.errs.NotSupported("target.kind", ref.kind, {"Job", "Queue"});
  }
  if (kind != nullptr && !ref.api_version.empty() && ref.api_version != kind->api_version) {
    c.errs.NotSupported("target.apiVersion", ref.api_version, {kind->api_version});
  }
  if (action.value_or("").empty()) {
    c.errs.Required("action");
  } else if (kind != nullptr) {
    bool known = false;
    for (std::string_view a : kind->actions) known = known || a == *action;
    if (!known) c.errs.NotSupported("action", *action, kind->actions);
  }
  if (!c.errs.empty() || !c.create() || kind == nullptr) return std::nullopt;

  std::optional<json::object> live = GetObject(c.req.store, std::string(kind->store_resource),
                                               kind->namespaced ? c.ns : "", ref.name);
  if (!live) {
    c.errs.NotFound("target.name", ref.name);
    return std::nullopt;
  }
  const std::string live_uid = NestedString(*live, "metadata", "uid");
  if (live_uid != ref.uid) {
    c.errs.InvalidString("target.uid", ref.uid,
                         fmt::format("{} {} has uid {}", kind->kind,
                                     kind->namespaced ? c.ns + "/" + ref.name : ref.name,
                                     live_uid));
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
