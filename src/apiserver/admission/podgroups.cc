#include "apiserver/admission/kinds.h"

// Volcano PodGroups: the CRD schema's checks of minMember, then on create
// volcano-sh/volcano pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go
// (mutatepodgroup.volcano.sh: the queue from the namespace's annotation, else "default") and
// podgroups/validate/validate_podgroup.go (validatepodgroup.volcano.sh: the queue exists and is
// Open; messages verbatim). spec.networkTopology as the CRD schema
// (config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml) checks and defaults it.

#include <cstdint>
#include <optional>
#include <string>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kPodGroupWebhook[] = "validatepodgroup.volcano.sh";

}  // namespace

void CheckNetworkTopology(Context& c, json::object& spec) {
  json::object* nt = c.reader.Obj(spec, "networkTopology", "spec.networkTopology",
                                  "v1beta1.NetworkTopologySpec");
  if (nt == nullptr) return;
  std::optional<std::string> mode = c.reader.Str(*nt, "mode", "spec.networkTopology.mode");
  std::optional<int64_t> tier =
      c.reader.Int(*nt, "highestTierAllowed", "spec.networkTopology.highestTierAllowed");
  std::optional<std::string> name =
      c.reader.Str(*nt, "highestTierName", "spec.networkTopology.highestTierName");
  if (!mode) {
    (*nt)["mode"] = "hard";  // the schema's default
  } else if (*mode != "hard" && *mode != "soft") {
    c.errs.NotSupported("spec.networkTopology.mode", *mode, {"hard", "soft"});
  }
  if (tier && *tier < 0) {
    // unverified: the CRD schema's minimum as apiextensions words it.
    c.errs.InvalidInt("spec.networkTopology.highestTierAllowed", *tier,
                      "spec.networkTopology.highestTierAllowed in body should be greater than or "
                      "equal to 0");
  }
  if (name && name->size() > 253) {
    c.errs.InvalidString("spec.networkTopology.highestTierName", *name,
                   "may not be more than 253 bytes");
  }
}

std::optional<ApiError> AdmitPodGroup(Context& c) {
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1beta1.PodGroupSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return TypeProblemsError(c);
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  std::optional<int64_t> min_member = c.reader.Int(*spec, "minMember", "spec.minMember");
  c.reader.Str(*spec, "queue", "spec.queue");
  CheckNetworkTopology(c, *spec);
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (min_member && *min_member < 0) {
    // unverified: the CRD schema's minimum as apiextensions words it.
    c.errs.InvalidInt("spec.minMember", *min_member,
                      "spec.minMember in body should be greater than or equal to 0");
  }
  if (!c.create() || !c.main_resource()) return std::nullopt;

  // mutatepodgroup.volcano.sh: the namespace's queue annotation, else "default".
  if (StringAt(*spec, "queue").empty()) {
    std::string queue = "default";
    if (std::optional<json::object> ns = GetObject(c.req.store, kNamespacesResource, "", c.ns)) {
      if (const json::object* meta = FindObject(*ns, "metadata")) {
        if (const json::object* annotations = FindObject(*meta, "annotations")) {
          std::string annotated = StringAt(*annotations, "scheduling.volcano.sh/queue-name");
          if (!annotated.empty()) queue = annotated;
        }
      }
    }
    (*spec)["queue"] = queue;
  }
  if (json::object* status = EnsureObject(c.obj, "status"))
    DefaultString(*status, "phase", "Pending");
  spec = &c.obj["spec"].as_object();  // the insert may have moved it
  if (!c.errs.empty()) return std::nullopt;

  // validatepodgroup.volcano.sh (create only).
  std::string queue = StringAt(*spec, "queue");
  std::optional<std::string> state = QueueState(c.req.store, queue);
  if (!state) {
    return WebhookDenied(kPodGroupWebhook,
                         fmt::format("unable to find queue: {}", QueueNotFound(queue)));
  }
  if (*state != "Open") {
    return WebhookDenied(kPodGroupWebhook,
                         fmt::format("can only submit PodGroup to queue with state `Open`, queue "
                                     "`{}` status is `{}`.",
                                     queue, *state));
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
