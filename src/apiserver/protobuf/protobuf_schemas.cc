#include "apiserver/protobuf/protobuf_schemas.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/text.h"
#include "apiserver/protobuf/kube_schemas.h"
#include "fmt/format.h"
#include "google/protobuf/descriptor.pb.h"

namespace muster::apiserver::protobuf_schemas {

namespace {

constexpr std::string_view kMetaPackage = "k8s.io.apimachinery.pkg.apis.meta.v1.";
// Kinds of meta/v1 that every group version registers (metav1.AddToGroupVersion) and kube's
// Status, which is registered unversioned.
constexpr std::string_view kMetaKinds[] = {"DeleteOptions", "CreateOptions", "UpdateOptions",
                                           "PatchOptions",  "GetOptions",    "ListOptions",
                                           "Status"};

// Go structs embedded without a JSON name, whose fields encoding/json writes into the embedding
// object, while gogo writes them as a field of their own: (the field's message, the field's name).
// Found in k8s.io/api's types.go as embedded fields with `json:""` and a protobuf tag.
struct InlineField {
  std::string_view message;
  std::string_view field;
};
constexpr InlineField kInlineFields[] = {
    {"LocalObjectReference", "localObjectReference"},  // the secret references of volumes
    {"VolumeSource", "volumeSource"},                  // Volume
    {"PersistentVolumeSource", "persistentVolumeSource"},
    {"EphemeralContainerCommon", "ephemeralContainerCommon"},
    {"ProbeHandler", "handler"},  // Probe
    {"IngressRuleValue", "ingressRuleValue"},
    {"DeviceConfiguration", "deviceConfiguration"},
};

struct SpecialType {
  std::string_view name;
  Shape shape;
};
constexpr SpecialType kSpecialTypes[] = {
    {"k8s.io.apimachinery.pkg.apis.meta.v1.Time", Shape::kTime},
    {"k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime", Shape::kMicroTime},
    {"k8s.io.apimachinery.pkg.apis.meta.v1.Duration", Shape::kDuration},
    {"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", Shape::kRawJson},
    {"k8s.io.apimachinery.pkg.apis.meta.v1.Verbs", Shape::kStringArray},
    {"k8s.io.apimachinery.pkg.api.resource.Quantity", Shape::kQuantity},
    {"k8s.io.apimachinery.pkg.util.intstr.IntOrString", Shape::kIntOrString},
    {"k8s.io.apimachinery.pkg.runtime.RawExtension", Shape::kRawJson},
    {"k8s.io.apimachinery.pkg.runtime.Unknown", Shape::kUnknown},
    // Not among the groups embedded today; here so that adding apiextensions needs nothing else.
    {"k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON", Shape::kRawJson},
    {"k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSON", Shape::kRawJson},
};

class FirstError : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name,
                const pb::Message* /*descriptor*/, ErrorLocation /*location*/,
                const std::string& message) override {
    if (error_.empty()) error_ = fmt::format("{}: {}: {}", filename, element_name, message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// The fields each special type is read by, as the code below expects them: a schema version that
// changed them fails loudly here rather than decoding wrongly.
absl::Status CheckSpecialType(const pb::Descriptor* d, Shape shape) {
  struct Want {
    int number;
    pb::FieldDescriptor::CppType type;
    bool repeated;
  };
  std::vector<Want> want;
  switch (shape) {
    case Shape::kTime:
    case Shape::kMicroTime:
      want = {{1, pb::FieldDescriptor::CPPTYPE_INT64, false},
              {2, pb::FieldDescriptor::CPPTYPE_INT32, false}};
      break;
    case Shape::kDuration:
      want = {{1, pb::FieldDescriptor::CPPTYPE_INT64, false}};
      break;
    case Shape::kQuantity:
      want = {{1, pb::FieldDescriptor::CPPTYPE_STRING, false}};
      break;
    case Shape::kIntOrString:
      want = {{1, pb::FieldDescriptor::CPPTYPE_INT64, false},
              {2, pb::FieldDescriptor::CPPTYPE_INT32, false},
              {3, pb::FieldDescriptor::CPPTYPE_STRING, false}};
      break;
    case Shape::kRawJson:
      want = {{1, pb::FieldDescriptor::CPPTYPE_STRING, false}};
      break;
    case Shape::kStringArray:
      want = {{1, pb::FieldDescriptor::CPPTYPE_STRING, true}};
      break;
    case Shape::kUnknown:
      want = {{1, pb::FieldDescriptor::CPPTYPE_MESSAGE, false},
              {2, pb::FieldDescriptor::CPPTYPE_STRING, false},
              {3, pb::FieldDescriptor::CPPTYPE_STRING, false},
              {4, pb::FieldDescriptor::CPPTYPE_STRING, false}};
      break;
    case Shape::kObject:
      break;
  }
  for (const Want& w : want) {
    const pb::FieldDescriptor* f = d->FindFieldByNumber(w.number);
    if (f == nullptr || f->cpp_type() != w.type || f->is_repeated() != w.repeated) {
      return absl::InternalError(fmt::format(
          "the embedded schema of {} has changed: field {} is not what protobuf.cc reads",
          d->full_name(), w.number));
    }
  }
  return absl::OkStatus();
}

// Loosens `message` (of `scope`, its package or enclosing message) and its nested messages: string
// fields become bytes, map entries ordinary messages; their full names are added to `text` and
// `maps`.
void Loosen(pb::DescriptorProto& message, const std::string& scope, std::vector<std::string>& text,
            std::vector<std::string>& maps) {
  const std::string name = scope + "." + message.name();
  for (pb::FieldDescriptorProto& field : *message.mutable_field()) {
    if (field.type() != pb::FieldDescriptorProto::TYPE_STRING) continue;
    field.set_type(pb::FieldDescriptorProto::TYPE_BYTES);
    text.push_back(name + "." + field.name());
  }
  for (pb::DescriptorProto& nested : *message.mutable_nested_type()) {
    if (nested.options().map_entry()) {
      nested.mutable_options()->clear_map_entry();
      maps.push_back(name + "." + nested.name());
    }
    Loosen(nested, name, text, maps);
  }
}

std::unique_ptr<Schemas> LoadSchemas() {
  auto s = std::make_unique<Schemas>();
  pb::FileDescriptorSet set;
  const std::string_view bytes = KubeDescriptorSet();
  if (!set.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    s->status = absl::InternalError("the embedded Kubernetes descriptor set does not parse");
    return s;
  }
  std::vector<std::string> text_fields;
  std::vector<std::string> map_entries;
  for (pb::FileDescriptorProto& file : *set.mutable_file()) {
    for (pb::DescriptorProto& message : *file.mutable_message_type()) {
      Loosen(message, file.package(), text_fields, map_entries);
    }
  }
  FirstError errors;
  for (const pb::FileDescriptorProto& file : set.file()) {
    if (s->pool.BuildFileCollectingErrors(file, &errors) == nullptr) {
      s->status = absl::InternalError(
          fmt::format("the embedded Kubernetes schemas do not load: {}", errors.error()));
      return s;
    }
    // ExtraValue (authentication, authorization, certificates) and AttestationValue: a []string
    // wrapped so that it can be a map's value.
    for (const pb::DescriptorProto& message : file.message_type()) {
      if (message.name() != "ExtraValue" && message.name() != "AttestationValue") continue;
      const pb::Descriptor* d =
          s->pool.FindMessageTypeByName(file.package() + "." + message.name());
      if (d != nullptr) s->shapes[d] = Shape::kStringArray;
    }
  }
  for (const std::string& name : text_fields) {
    if (const pb::FieldDescriptor* f = s->pool.FindFieldByName(name)) s->text_fields.insert(f);
  }
  for (const std::string& name : map_entries) {
    const pb::Descriptor* d = s->pool.FindMessageTypeByName(name);
    if (d == nullptr || d->FindFieldByNumber(1) == nullptr || d->FindFieldByNumber(2) == nullptr) {
      s->status = absl::InternalError(fmt::format("the map entry {} did not load", name));
      return s;
    }
    s->map_entries.insert(d);
  }
  for (const pb::FileDescriptorProto& file : set.file()) {
    for (const pb::DescriptorProto& message : file.message_type()) {
      const pb::Descriptor* d =
          s->pool.FindMessageTypeByName(file.package() + "." + message.name());
      for (int i = 0; d != nullptr && i < d->field_count(); ++i) {
        const pb::FieldDescriptor* f = d->field(i);
        for (const InlineField& inline_field : kInlineFields) {
          if (f->message_type() != nullptr && !f->is_repeated() &&
              f->name() == inline_field.field &&
              f->message_type()->name() == inline_field.message) {
            s->inline_fields.insert(f);
          }
        }
      }
    }
  }
  for (const SpecialType& special : kSpecialTypes) {
    const pb::Descriptor* d = s->pool.FindMessageTypeByName(std::string(special.name));
    if (d != nullptr) s->shapes[d] = special.shape;
  }
  for (const auto& [d, shape] : s->shapes) {
    if (absl::Status checked = CheckSpecialType(d, shape); !checked.ok()) {
      s->status = checked;
      return s;
    }
  }
  s->unknown = s->pool.FindMessageTypeByName("k8s.io.apimachinery.pkg.runtime.Unknown");
  if (s->unknown == nullptr) {
    s->status = absl::InternalError("the embedded Kubernetes schemas lack runtime.Unknown");
  }
  return s;
}

bool AllOf(std::string_view text, bool (*ok)(char)) {
  return !text.empty() && std::all_of(text.begin(), text.end(), ok);
}
bool LowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool AlphaOrDigit(char c) { return LowerOrDigit(c) || (c >= 'A' && c <= 'Z'); }

// Whether `d` is an object kind kube registers: its field 1 is `metadata`, an ObjectMeta or a
// ListMeta. Keeps apiVersion v1 kind Container (a message, no kind) out.
bool IsKind(const pb::Descriptor* d) {
  const pb::FieldDescriptor* f = d->FindFieldByNumber(1);
  if (f == nullptr || f->name() != "metadata" || f->message_type() == nullptr) return false;
  const std::string& type = f->message_type()->full_name();
  return type == "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta" ||
         type == "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta";
}

}  // namespace

const Schemas& GetSchemas() {
  static const Schemas* const schemas = LoadSchemas().release();
  return *schemas;
}

absl::StatusOr<const pb::Descriptor*> KindMessage(const Schemas& s, std::string_view api_version,
                                                  std::string_view kind) {
  auto none = [&] {
    return absl::UnimplementedError(
        fmt::format("muster has no protobuf schema for {} {}: send it as application/json",
                    api::GoQuote(api_version), api::GoQuote(kind)));
  };
  const size_t slash = api_version.find('/');
  const std::string_view group =
      slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
  const std::string_view version =
      slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
  if (!AllOf(version, LowerOrDigit) || !AllOf(kind, AlphaOrDigit) || kind[0] < 'A' ||
      kind[0] > 'Z') {
    return none();
  }
  std::string package;
  if (group.empty()) {
    package = "k8s.io.api.core.";
  } else if (group == "meta.k8s.io") {
    package = std::string(kMetaPackage.substr(0, kMetaPackage.size() - 3));  // without "v1."
  } else {
    // "policy", "scheduling.k8s.io": k8s.io/api/<first label>. "core" is no group name (the
    // core group is ""), and groups outside k8s.io are not kube's.
    const std::string_view label = group.substr(0, group.find('.'));
    if (label == "core" || !AllOf(label, LowerOrDigit) ||
        (label.size() != group.size() && !group.ends_with(".k8s.io"))) {
      return none();
    }
    package = fmt::format("k8s.io.api.{}.", label);
  }
  const pb::Descriptor* d =
      s.pool.FindMessageTypeByName(fmt::format("{}{}.{}", package, version, kind));
  if (d != nullptr && IsKind(d)) return d;
  if (std::find(std::begin(kMetaKinds), std::end(kMetaKinds), kind) != std::end(kMetaKinds)) {
    d = s.pool.FindMessageTypeByName(fmt::format("{}{}", kMetaPackage, kind));
    if (d != nullptr) return d;
  }
  return none();
}

}  // namespace muster::apiserver::protobuf_schemas
