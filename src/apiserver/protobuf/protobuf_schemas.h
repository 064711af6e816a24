#pragma once

// Kubernetes' protobuf schemas as protobuf.cc parses with them: the FileDescriptorSet that
// kube_schemas.cmake embeds, built once into a DescriptorPool, with what the JSON conversion needs
// to know of each message (Shape) and of the loosening.
//
// The schemas are loosened before the pool is built: every string field becomes bytes, and map
// entries ordinary messages, on the same wire format. protobuf would check (proto2: only log, on
// the server's stderr, for every client-sent string) that strings are UTF-8; Go's decoder does
// not, and its encoding/json writes what is not UTF-8 as U+FFFD, which the conversion does here.
// Which fields were strings and which messages map entries is kept aside (Schemas).

#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"

namespace muster::apiserver::protobuf_schemas {

namespace pb = google::protobuf;

// How a message type is written as JSON: as an object of its fields, or as the Go type it stands
// for marshals itself.
enum class Shape {
  kObject,
  kTime,         // meta/v1 Time {seconds, nanos}: RFC 3339, whole seconds
  kMicroTime,    // meta/v1 MicroTime {seconds, nanos}: RFC 3339 with microseconds
  kDuration,     // meta/v1 Duration {duration}: time.Duration.String()
  kQuantity,     // resource.Quantity {string}
  kIntOrString,  // intstr.IntOrString {type, intVal, strVal}
  kRawJson,      // runtime.RawExtension {raw}, meta/v1 FieldsV1 {Raw}, apiextensions JSON {raw}
  kStringArray,  // ExtraValue, AttestationValue, meta/v1 Verbs {items}: a []string in Go
  kUnknown,      // runtime.Unknown: the object it holds
};

// The embedded schemas, loaded once and only read after (DescriptorPool lookups and
// DynamicMessageFactory::GetPrototype are thread-safe).
struct Schemas {
  pb::DescriptorPool pool;
  mutable pb::DynamicMessageFactory factory{&pool};
  absl::flat_hash_map<const pb::Descriptor*, Shape> shapes;
  // The loosening (see the top of the file): the fields that were strings (the others of bytes
  // type are bytes, written in base64), the messages that were map entries, the inline fields.
  absl::flat_hash_set<const pb::FieldDescriptor*> text_fields;
  absl::flat_hash_set<const pb::Descriptor*> map_entries;
  absl::flat_hash_set<const pb::FieldDescriptor*> inline_fields;
  const pb::Descriptor* unknown = nullptr;  // runtime.Unknown, the envelope
  absl::Status status;                      // of loading; not OK means a build defect
};

// The schemas, loaded on first use (thread-safe); status says whether they loaded.
const Schemas& GetSchemas();

// The message of `kind` in `api_version`; Unimplemented when the schemas hold none.
absl::StatusOr<const pb::Descriptor*> KindMessage(const Schemas& s, std::string_view api_version,
                                                  std::string_view kind);

}  // namespace muster::apiserver::protobuf_schemas
