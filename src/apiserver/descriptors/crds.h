#pragma once

// CustomResourceDefinitions (apiextensions.k8s.io/v1) of the Volcano kinds muster serves, made
// from the same resource registry (resources.h) and OpenAPI documents (openapi.h, whose schemas
// are the data files of schemas/, e.g. schemas/batch.volcano.sh.v1alpha1.json) that `muster up`
// serves, so that the CRDs installed on a real cluster (`muster manifests crds`, deploy/crds/) and
// muster's own OpenAPI never disagree.
//
// They are compatible with Volcano's own CRDs (config/crd/volcano/bases in volcano-sh/volcano):
// the same group, version, plural, singular, kind, short names, scope, printer columns and
// subresources (jobs and queues have `status`, podgroups none: vc-scheduler and muster write a
// PodGroup's status with the object itself; commands have none and no printer columns), so that
// either set can be installed over the other and both muster and Volcano work with whichever is
// there.
//
// The schemas are made structural as the API server requires: references inlined, quantities as
// `x-kubernetes-int-or-string`, times as date-time strings, `metadata` as a bare object, and each
// task's pod template kept whole (`x-kubernetes-preserve-unknown-fields`) rather than pruned to the
// fields muster describes. Only the extensions apiextensions accepts are kept.

#include <vector>

#include "apiserver/descriptors/resources.h"
#include "boost/json/value.hpp"

namespace muster::apiserver {

// The CRD of one custom resource (info.builtin false); a null value for a built-in one.
boost::json::value CustomResourceDefinition(const ResourceInfo& info);

// The CRDs of every custom resource muster serves, in registry order.
std::vector<boost::json::value> CustomResourceDefinitions();

}  // namespace muster::apiserver
