#include "apiserver/admission/kinds.h"

// ObjectMeta of every kind: apimachinery pkg/api/validation ValidateObjectMeta (names, labels,
// annotations, ownerReferences, finalizers) and ValidateObjectMetaUpdate, and what
// pkg/registry/rest BeforeCreate / BeforeUpdate do to the system fields (uid, timestamps).

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/selector.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

// The object-name rule of each kind (ValidateObjectMeta's nameFn).
std::vector<std::string> NameErrors(const ResourceInfo& res, std::string_view name) {
  if (res.group.empty() && res.resource == "namespaces") return Dns1123LabelErrors(name);
  if (res.group.empty() && res.resource == "services") return Dns1035LabelErrors(name);
  return Dns1123SubdomainErrors(name);
}

void ValidateAnnotations(Context& c, const json::object& meta) {
  const std::string path = "metadata.annotations";
  const json::value* v = meta.if_contains("annotations");
  if (IsAbsent(v)) return;
  const json::object* annotations = v->if_object();
  if (annotations == nullptr) {
    c.reader.Problem(path, *v, "map[string]string", "object");
    return;
  }
  std::map<std::string, const json::value*> sorted;
  for (const auto& [k, val] : *annotations) sorted[std::string(k)] = &val;
  size_t total = 0;
  for (const auto& [k, val] : sorted) {
    std::string lower = k;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (const std::string& msg : QualifiedNameErrors(lower)) c.errs.InvalidString(path, k, msg);
    total += k.size();
    if (val->is_string()) {
      total += val->get_string().size();
    } else if (!val->is_null()) {
      c.reader.Problem(path + "." + k, *val, "string", "string");
    }
  }
  if (total > kTotalAnnotationSizeLimit) c.errs.TooLong(path, kTotalAnnotationSizeLimit);
}

void ValidateOwnerReferences(Context& c, json::object& meta) {
  const std::string path = "metadata.ownerReferences";
  json::array* refs = c.reader.Arr(meta, "ownerReferences", path, "[]v1.OwnerReference");
  if (refs == nullptr) return;
  std::string first_controller;
  for (json::value& rv : *refs) {
    json::object* ref = rv.if_object();
    if (ref == nullptr) {
      c.reader.Problem(path, rv, "v1.OwnerReference", "object");
      continue;
    }
    std::string api_version = c.reader.StrOr(*ref, "apiVersion", path + ".apiVersion");
    std::string kind = c.reader.StrOr(*ref, "kind", path + ".kind");
    std::string name = c.reader.StrOr(*ref, "name", path + ".name");
    std::string uid = c.reader.StrOr(*ref, "uid", path + ".uid");
    // schema.FromAPIVersionAndKind: the version is what follows the last '/'.
    size_t slash = api_version.rfind('/');
    std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    if (version.empty()) {
      c.errs.InvalidString(path + ".apiVersion", api_version, "version must not be empty");
    }
    if (kind.empty()) c.errs.InvalidString(path + ".kind", kind, "kind must not be empty");
    if (name.empty()) c.errs.InvalidString(path + ".name", name, "name must not be empty");
    if (uid.empty()) c.errs.InvalidString(path + ".uid", uid, "uid must not be empty");
    if (c.reader.Bool(*ref, "controller", path + ".controller").value_or(false)) {
      std::string current = kind + "/" + name;
      if (!first_controller.empty()) {
        // unverified: Go prints the whole []metav1.OwnerReference (%#v); we print the JSON.
        c.errs.Invalid(path, json::serialize(*refs),
                       fmt::format("Only one reference can have Controller set to true. Found "
                                   "\"true\" in references for {} and {}",
                                   first_controller, current));
      } else {
        first_controller = current;
      }
    }
  }
}

std::vector<std::string> StringList(Context& c, json::object& o, std::string_view key,
                                    const std::string& path) {
  std::vector<std::string> out;
  json::array* arr = c.reader.Arr(o, key, path, "[]string");
  if (arr == nullptr) return out;
  for (json::value& v : *arr) {
    if (const json::string* s = v.if_string()) {
      out.emplace_back(View(*s));
    } else {
      c.reader.Problem(path, v, "string", "string");
    }
  }
  return out;
}

void ValidateFinalizers(Context& c, json::object& meta) {
  const std::string path = "metadata.finalizers";
  std::vector<std::string> finalizers = StringList(c, meta, "finalizers", path);
  bool orphan = false;
  bool foreground = false;
  for (const std::string& f : finalizers) {
    for (const std::string& msg : QualifiedNameErrors(f)) c.errs.InvalidString(path, f, msg);
    orphan = orphan || f == "orphan";
    foreground = foreground || f == "foregroundDeletion";
  }
  if (orphan && foreground) {
    c.errs.Invalid(path, GoStringSlice(finalizers),
                   "finalizer orphan and foregroundDeletion cannot be both set");
  }
}

}  // namespace

void ValidateLabels(Context& c, const json::object& parent, std::string_view key,
                    const std::string& path) {
  json::value const* v = parent.if_contains(key);
  if (IsAbsent(v)) return;
  const json::object* labels = v->if_object();
  if (labels == nullptr) {
    c.reader.Problem(path, *v, "map[string]string", "object");
    return;
  }
  std::map<std::string, const json::value*> sorted;
  for (const auto& [k, val] : *labels) sorted[std::string(k)] = &val;
  for (const auto& [k, val] : sorted) {
    // selector.h holds the verdict; the text is apimachinery's.
    if (!api::ValidateLabelKey(k).ok()) {
      for (const std::string& msg : QualifiedNameErrors(k)) c.errs.InvalidString(path, k, msg);
    }
    if (val->is_null()) continue;
    if (!val->is_string()) {
      c.reader.Problem(path + "." + k, *val, "string", "string");
      continue;
    }
    std::string_view value = View(val->get_string());
    if (!api::ValidateLabelValue(value).ok()) {
      for (const std::string& msg : LabelValueErrors(value)) {
        c.errs.InvalidString(path, value, msg);
      }
    }
  }
}

// ValidateObjectMeta, plus what rest.BeforeCreate / BeforeUpdate do to system fields.
void AdmitMetadata(Context& c) {
  json::object* meta = EnsureObject(c.obj, "metadata");
  if (meta == nullptr) {
    c.reader.Problem("metadata", c.obj["metadata"], "v1.ObjectMeta", "object");
    return;
  }
  c.name = c.reader.StrOr(*meta, "name", "metadata.name");
  if (c.name.empty()) {
    c.errs.Required("metadata.name", "name or generateName is required");
  } else {
    for (const std::string& msg : NameErrors(c.res, c.name)) {
      c.errs.InvalidString("metadata.name", c.name, msg);
    }
  }
  if (c.res.namespaced) {
    c.ns = c.reader.StrOr(*meta, "namespace", "metadata.namespace");
    if (c.ns.empty()) {
      c.errs.Required("metadata.namespace");
    } else {
      for (const std::string& msg : Dns1123LabelErrors(c.ns)) {
        c.errs.InvalidString("metadata.namespace", c.ns, msg);
      }
    }
  } else {
    // EnsureObjectNamespaceMatchesRequestNamespace clears it for cluster-scoped kinds.
    meta->erase("namespace");
  }
  if (std::optional<int64_t> gen =
          c.reader.Int(*meta, "generation", "metadata.generation", "int64");
      gen && *gen < 0) {
    c.errs.InvalidInt("metadata.generation", *gen, "must be greater than or equal to 0");
  }
  ValidateLabels(c, *meta, "labels", "metadata.labels");
  ValidateAnnotations(c, *meta);
  ValidateOwnerReferences(c, *meta);
  ValidateFinalizers(c, *meta);

  if (c.create()) {
    meta->erase("deletionTimestamp");
    meta->erase("deletionGracePeriodSeconds");
    return;
  }

  // Update: ValidateObjectMetaUpdate and rest.BeforeUpdate.
  const json::object* old_meta = FindObject(*c.req.old, "metadata");
  static const json::object kEmpty;
  if (old_meta == nullptr) old_meta = &kEmpty;
  std::string old_name = StringAt(*old_meta, "name");
  std::string old_ns = StringAt(*old_meta, "namespace");
  if (c.name != old_name) c.errs.InvalidString("metadata.name", c.name, "field is immutable");
  if (c.res.namespaced && c.ns != old_ns) {
    c.errs.InvalidString("metadata.namespace", c.ns, "field is immutable");
  }
  std::string uid = StringAt(*meta, "uid");
  std::string old_uid = StringAt(*old_meta, "uid");
  if (uid.empty() && !old_uid.empty()) {
    (*meta)["uid"] = old_uid;
  } else if (uid != old_uid) {
    c.errs.InvalidString("metadata.uid", uid, "field is immutable");
  }
  for (std::string_view key :
       {"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"}) {
    if (const json::value* old_value = old_meta->if_contains(key)) {
      (*meta)[key] = *old_value;
    } else {
      meta->erase(key);
    }
  }
  if (old_meta->contains("deletionTimestamp")) {
    std::set<std::string> old_finalizers;
    if (const json::value* of = old_meta->if_contains("finalizers"); of && of->is_array()) {
      for (const json::value& f : of->get_array()) {
        if (f.is_string()) old_finalizers.insert(std::string(View(f.get_string())));
      }
    }
    std::set<std::string> added;
    if (const json::value* nf = meta->if_contains("finalizers"); nf && nf->is_array()) {
      for (const json::value& f : nf->get_array()) {
        if (f.is_string() && !old_finalizers.contains(std::string(View(f.get_string())))) {
          added.insert(std::string(View(f.get_string())));
        }
      }
    }
    if (!added.empty()) {
      c.errs.Forbidden("metadata.finalizers",
                       fmt::format("no new finalizers can be added if the object is being "
                                   "deleted, found new finalizers {}",
                                   GoStringSlice({added.begin(), added.end()})));
    }
  }
}

}  // namespace muster::apiserver::admission
