#pragma once

// OpenAPI v3 documents for every served group-version, built from the resource registry
// (resources.h) and the field schemas of schemas/*.json (schemas/README.md: one file per
// group-version, compiled into the binary). They serve two kubectl needs:
//   - `create -f`, `apply -f`, `replace -f` look, in the object's group-version document, for a
//     PATCH operation whose x-kubernetes-group-version-kind is the object's and that takes a
//     `fieldValidation` query parameter; finding one they skip client-side validation (which
//     would need the protobuf /openapi/v2) and send `fieldValidation=Strict`.
//   - `explain` finds the path of the resource, takes its operation's GVK, finds the schema in
//     components.schemas carrying that GVK and walks `properties`, `items`, `allOf` and
//     `$ref: "#/components/schemas/<name>"`.
// Schema names follow kube-apiserver: io.k8s.api.core.v1.Pod, io.k8s.api.scheduling.v1.
// PriorityClass, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta; for custom resources the group
// reversed: sh.volcano.batch.v1alpha1.Job. Each document holds the schemas it references.
//
// Thread-safety: all functions may be called concurrently; documents are built once, on first
// use, and never change for the life of the process.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/descriptors/resources.h"
#include "boost/json/value.hpp"

namespace muster::apiserver {

// Names the documents use, for code that reads them (crds.h).
inline constexpr std::string_view kSchemaRefPrefix = "#/components/schemas/";
inline constexpr std::string_view kQuantitySchema = "io.k8s.apimachinery.pkg.api.resource.Quantity";
inline constexpr std::string_view kObjectMetaSchema =
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

// A per-group-version document, ready to send.
struct OpenApiDocument {
  std::string path;  // "api/v1", "apis/batch.volcano.sh/v1alpha1" (the index key)
  std::string hash;  // of `json`: stable for a build, different when the document differs
  std::string json;  // the serialized document
};

// Reply headers that let kubectl keep a document in its disk cache (it needs both); send them
// when the request's `hash` query parameter equals the document's hash.
inline constexpr std::string_view kOpenApiCacheControl = "public, immutable";

// `GET /openapi/v3`: {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=…"},
// …}}, one entry per served group-version.
boost::json::value OpenApiIndex();

// `GET /openapi/v3/<path>` with `path` as in the index ("api/v1", no leading slash, no query);
// nullptr when no such document is served.
const OpenApiDocument* FindOpenApiDocument(std::string_view path);

// Builds the document of one group-version (what FindOpenApiDocument serves, unserialized); a
// null value when the group-version is not served.
boost::json::value BuildOpenApiDocument(std::string_view group, std::string_view version);
// The same for a set with custom resources: their kinds' schemas are their CRDs' (metadata as
// ObjectMeta, apiVersion and kind described), as kube-apiserver publishes them.
boost::json::value BuildOpenApiDocument(const ResourceSet& set, std::string_view group,
                                        std::string_view version);

// The documents of every group-version of a ResourceSet, built once (a built-in group-version's
// document is the one the functions above serve). Immutable: a new set gets new documents.
class OpenApiDocuments {
 public:
  static std::shared_ptr<const OpenApiDocuments> Build(const ResourceSet& set);
  // What OpenApiIndex and FindOpenApiDocument answer, for this set.
  boost::json::value Index() const;
  const OpenApiDocument* Find(std::string_view path) const;

 private:
  std::vector<std::shared_ptr<const OpenApiDocument>> docs_;
};

// `GET /openapi/v2`: a valid Swagger 2.0 document without paths or definitions (the schemas are
// published in /openapi/v3 only), as JSON or, when `protobuf`, in gnostic's openapi_v2.Document
// encoding, which kubectl asks for. kubectl 1.32 reads v2 to validate client-side an object whose
// kind the v3 documents do not cover (a kind muster does not serve, a v1 List). Finding no schema
// there it skips that check, as against kube-apiserver for a CRD that is not installed, and the
// object's mapping then fails with kube's `no matches for kind "Deployment" in version "apps/v1"`
// / `ensure CRDs are installed first` (without v2 it stopped at "error validating data: the server
// could not find the requested resource"). Served kinds are validated by the server
// (fieldValidation), as before.
inline constexpr std::string_view kOpenApiV2ProtobufType =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
std::string OpenApiV2Document(bool protobuf);

// The components.schemas name of a resource's kind ("io.k8s.api.core.v1.Pod",
// "sh.volcano.batch.v1alpha1.Job"), and of its list kind when `list` is set.
std::string SchemaName(const ResourceInfo& resource, bool list = false);

}  // namespace muster::apiserver
