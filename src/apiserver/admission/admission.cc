#include "apiserver/admission/admission.h"

// Rationale. Every message here is the one kube-apiserver or Volcano's admission webhook prints
// for the same mistake, because people read them through the real kubectl and search for them:
//   - field errors:   k8s.io/apimachinery/pkg/util/validation/field (Error, ErrorBody, ToAggregate)
//                     (field_errors.h)
//   - 422 bodies:     apierrors.NewInvalid ("<Kind>[.<group>] "<name>" is invalid: ...")
//   - name rules:     apimachinery util/validation (IsDNS1123Label, IsQualifiedName, ...)
//   - metadata:       apimachinery ValidateObjectMeta / ValidateObjectMetaUpdate, rest.BeforeUpdate
//                     (object_meta.cc), namespace/lifecycle (namespaces.cc)
//   - pods:           pkg/apis/core/v1/defaults.go, plugin/pkg/admission/priority,
//                     defaulttolerationseconds (pods_mutate.cc); pkg/apis/core/validation
//                     (ValidatePodSpec, ValidatePodUpdate) (pods_validate.cc)
//   - other core:     namespaces.cc, events.cc, services.cc (defaults, cluster IPs, node ports),
//                     config_data.cc (ConfigMaps and Secrets); nodes.cc (muster's own
//                     muster.dev/gpu-topology annotation)
//   - priority:       pkg/apis/scheduling/validation (priorityclasses.cc)
//   - policy:         pkg/apis/policy/validation (poddisruptionbudgets.cc)
//   - batch:          pkg/apis/batch/v1/defaults.go, pkg/registry/batch/job/strategy.go,
//                     pkg/apis/batch/validation (batch_jobs.cc, cronjobs.cc)
//   - apiextensions:  apiextensions-apiserver pkg/apis/apiextensions/validation and the naming
//                     and establishing controllers (customresourcedefinitions.cc); custom
//                     resources through their CRD's schema (custom_resources.cc)
//   - Volcano:        pkg/webhooks/admission/{jobs,podgroups,queues}/{mutate,validate}
//                     (jobs_mutate.cc, jobs_validate.cc, podgroups.cc, queues.cc); Commands,
//                     which Volcano does not check, by muster's own rules (commands.cc)
// A webhook refusal reaches kubectl as kube-apiserver renders it: code 400, no reason, message
// `admission webhook "<name>" denied the request: <text>` (webhookerrors.ToStatusErr).
// Where a message could not be checked against the upstream source it is marked "unverified".
//
// Objects are handled as JSON, not decoded into the typed model, so that fields muster does not
// model survive admission untouched. Type mistakes in fields that admission reads are refused the
// way the upstream decoder (built-in kinds: 400) or CRD schema (Volcano kinds: 422) would.
//
// This file is the entry point: the metadata checks every kind gets, then the kind's own step
// (kinds.h), in the order kube-apiserver runs decoding, mutating and validating admission.

#include <optional>

#include "apiserver/admission/context.h"
#include "apiserver/admission/field_errors.h"
#include "apiserver/admission/kinds.h"
#include "boost/json.hpp"

namespace muster::apiserver {

using admission::AdmitBatchJob;
using admission::AdmitCommand;
using admission::AdmitHyperNode;
using admission::AdmitConfigMap;
using admission::AdmitCronJob;
using admission::AdmitCustomResource;
using admission::AdmitCustomResourceDefinition;
using admission::AdmitEvent;
using admission::AdmitMetadata;
using admission::AdmitNamespace;
using admission::AdmitNode;
using admission::AdmitPod;
using admission::AdmitPodDisruptionBudget;
using admission::AdmitPodGroup;
using admission::AdmitPriorityClass;
using admission::AdmitQueue;
using admission::AdmitSecret;
using admission::AdmitService;
using admission::AdmitVolcanoJob;
using admission::CheckNamespaceLifecycle;
using admission::Context;
using admission::InvalidError;
using admission::TypeProblemsError;

std::optional<ApiError> Admit(const AdmissionRequest& req, boost::json::object& obj) {
  if (req.resource == nullptr) {
    ApiError err;
    err.code = 500;
    err.reason = "InternalError";
    err.message = "admission: no resource given";
    return err;
  }
  Context c(req, obj);
  AdmitMetadata(c);
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (std::optional<ApiError> err = CheckNamespaceLifecycle(c)) return err;

  const ResourceInfo& res = *req.resource;
  std::optional<ApiError> refused;
  if (res.custom != nullptr) {
    refused = AdmitCustomResource(c);
  } else if (res.group == "apiextensions.k8s.io" && res.resource == "customresourcedefinitions") {
    refused = AdmitCustomResourceDefinition(c);
  } else if (res.group.empty()) {
    if (res.resource == "pods") refused = AdmitPod(c);
    if (res.resource == "namespaces") refused = AdmitNamespace(c);
    if (res.resource == "nodes") refused = AdmitNode(c);
    if (res.resource == "events") refused = AdmitEvent(c);
    if (res.resource == "services") refused = AdmitService(c);
    if (res.resource == "configmaps") refused = AdmitConfigMap(c);
    if (res.resource == "secrets") refused = AdmitSecret(c);
  } else if (res.group == "scheduling.k8s.io" && res.resource == "priorityclasses") {
    refused = AdmitPriorityClass(c);
  } else if (res.group == "policy" && res.resource == "poddisruptionbudgets") {
    refused = AdmitPodDisruptionBudget(c);
  } else if (res.group == "batch" && res.resource == "jobs") {
    refused = AdmitBatchJob(c);
  } else if (res.group == "batch" && res.resource == "cronjobs") {
    refused = AdmitCronJob(c);
  } else if (res.group == "batch.volcano.sh" && res.resource == "jobs") {
    refused = AdmitVolcanoJob(c);
  } else if (res.group == "scheduling.volcano.sh" && res.resource == "podgroups") {
    refused = AdmitPodGroup(c);
  } else if (res.group == "scheduling.volcano.sh" && res.resource == "queues") {
    refused = AdmitQueue(c);
  } else if (res.group == "bus.volcano.sh" && res.resource == "commands") {
    refused = AdmitCommand(c);
  } else if (res.group == "topology.volcano.sh" && res.resource == "hypernodes") {
    refused = AdmitHyperNode(c);
  }
  if (refused) return refused;
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (!c.errs.empty()) return InvalidError(res, c.name, c.errs.list());
  return std::nullopt;
}

}  // namespace muster::apiserver
