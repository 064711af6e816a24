// The protobuf body decoder (protobuf.h) against bodies client-go wrote (testdata/protobuf, with
// the JSON client-go writes for the same objects), and against hand-made malformed ones.

#include "apiserver/protobuf/protobuf.h"

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

std::string Fixture(std::string_view name) {
  const std::string path = std::string(MUSTER_PROTOBUF_TESTDATA) + "/" + std::string(name);
  std::optional<std::string> text = common::ReadFile(path);
  EXPECT_TRUE(text.has_value()) << path;
  return text.value_or("");
}

// The fixtures tests/clients/protobuf-bodies writes (NAME.pb and NAME.json).
const std::vector<std::string>& FixtureNames() {
  static const std::vector<std::string> names = {"configmap",
                                                 "service",
                                                 "priorityclass",
                                                 "priorityclass-negative",
                                                 "lease",
                                                 "pod",
                                                 "namespace",
                                                 "deleteoptions",
                                                 "eviction",
                                                 "list",
                                                 "selfsubjectaccessreview",
                                                 "subjectaccessreview",
                                                 "selfsubjectreview"};
  return names;
}

json::object Decode(std::string_view body) {
  absl::StatusOr<json::object> object = DecodeProtobufObject(body);
  EXPECT_TRUE(object.ok()) << object.status();
  return object.ok() ? *object : json::object();
}

json::object DecodeFixture(std::string_view name) {
  return Decode(Fixture(std::string(name) + ".pb"));
}

// --- The wire format, for hand-made bodies -------------------------------------------------------

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Key(int field, int wire) { return Varint((static_cast<uint64_t>(field) << 3) | wire); }
std::string Bytes(int field, std::string_view value) {
  return Key(field, 2) + Varint(value.size()) + std::string(value);
}
std::string Number(int field, uint64_t value) { return Key(field, 0) + Varint(value); }
// A map<string, string> entry.
std::string Entry(int field, std::string_view key, std::string_view value) {
  return Bytes(field, Bytes(1, key) + Bytes(2, value));
}

const std::string kMagic("k8s\0", 4);

std::string TypeMeta(std::string_view api_version, std::string_view kind) {
  return Bytes(1, Bytes(1, api_version) + Bytes(2, kind));
}
// "k8s\0" + runtime.Unknown{typeMeta, raw} + `rest` (more fields of the Unknown).
std::string Envelope(std::string_view api_version, std::string_view kind, std::string_view raw,
                     std::string_view rest = "") {
  return kMagic + TypeMeta(api_version, kind) + Bytes(2, raw) + std::string(rest);
}
// A v1 ConfigMap named `name` with `more` fields after its metadata.
std::string ConfigMap(std::string_view name, std::string_view more = "") {
  return Envelope("v1", "ConfigMap", Bytes(1, Bytes(1, name)) + std::string(more));
}

// Where `ours` differs from `go` (client-go's JSON of the same object), allowing what protobuf.h
// says differs: Go's nulls are left out, and a member only ours has must be a zero number, false
// or {} (gogo writes non-pointer numbers, bools and structs that encoding/json omits).
void Differences(const json::value& ours, const json::value& go, const std::string& path,
                 std::vector<std::string>& out) {
  if (go.is_object() && ours.is_object()) {
    const json::object& o = ours.get_object();
    const json::object& g = go.get_object();
    for (const auto& [key, value] : g) {
      const std::string at = path + "." + std::string(key);
      if (value.is_null()) {
        if (o.contains(key)) out.push_back(at + ": Go has null, ours is present");
        continue;
      }
      if (!o.contains(key)) {
        out.push_back(at + ": missing, Go has " + json::serialize(value));
        continue;
      }
      Differences(o.at(key), value, at, out);
    }
    for (const auto& [key, value] : o) {
      if (g.contains(key)) continue;
      const bool zero = (value.is_int64() && value.get_int64() == 0) ||
                        (value.is_bool() && !value.get_bool()) ||
                        (value.is_object() && value.get_object().empty());
      if (!zero) {
        out.push_back(path + "." + std::string(key) + ": only ours, " + json::serialize(value));
      }
    }
    return;
  }
  if (go.is_array() && ours.is_array() && go.get_array().size() == ours.get_array().size()) {
    for (size_t i = 0; i < go.get_array().size(); ++i) {
      Differences(ours.get_array()[i], go.get_array()[i], path + "[" + std::to_string(i) + "]",
                  out);
    }
    return;
  }
  if (ours != go) {
    out.push_back(path + ": ours " + json::serialize(ours) + ", Go " + json::serialize(go));
  }
}

// What every decoded object must satisfy: it serializes to JSON that Boost.JSON (muster's JSON
// reader, with its default depth limit) parses back to the same value.
void ExpectStorable(const json::object& object) {
  const std::string text = json::serialize(object);
  json::error_code error;
  const json::value back = json::parse(text, error);
  ASSERT_FALSE(error) << error.message() << ": " << text.substr(0, 200);
  EXPECT_EQ(back, json::value(object));
}

// --- Bodies client-go wrote ---------------------------------------------------------------------

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, MatchesClientGoJson) {
  const json::object ours = DecodeFixture(GetParam());
  std::vector<std::string> differences;
  Differences(ours, json::parse(Fixture(GetParam() + ".json")), GetParam(), differences);
  EXPECT_THAT(differences, ::testing::IsEmpty()) << json::serialize(ours);
  ExpectStorable(ours);
}

TEST_P(FixtureTest, KindAndApiVersionComeFirst) {
  const json::object ours = DecodeFixture(GetParam());
  ASSERT_GE(ours.size(), 2u);
  EXPECT_EQ(ours.begin()->key(), "kind");
  EXPECT_EQ((ours.begin() + 1)->key(), "apiVersion");
}

// Every prefix that cuts into the object's bytes is refused, with a message.
TEST_P(FixtureTest, TruncatedBodiesAreRefused) {
  const std::string body = Fixture(GetParam() + ".pb");
  // "k8s\0", typeMeta (key, one-byte length, bytes), then raw's key and length.
  ASSERT_EQ(body[4], '\x0a');
  const size_t raw_key = 6 + static_cast<uint8_t>(body[5]);
  ASSERT_EQ(body[raw_key], '\x12');
  uint64_t raw_length = 0;
  size_t pos = raw_key + 1;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<uint8_t>(body.at(pos++));
    raw_length |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  const size_t raw_end = pos + raw_length;
  ASSERT_LE(raw_end, body.size());
  for (size_t n = 0; n < raw_end; ++n) {
    if (n == raw_key) continue;  // the envelope without raw is an empty object
    absl::StatusOr<json::object> got = DecodeProtobufObject(std::string_view(body).substr(0, n));
    ASSERT_FALSE(got.ok()) << GetParam() << " cut to " << n << " bytes";
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_FALSE(got.status().message().empty());
  }
}

// Seeded random damage (flipped, inserted, deleted bytes): an object or an error, never a crash,
// and what decodes is storable JSON.
TEST_P(FixtureTest, DamagedBodiesDecodeOrFail) {
  const std::string body = Fixture(GetParam() + ".pb");
  std::mt19937 rng(1);
  for (int i = 0; i < 3000; ++i) {
    std::string damaged = body;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !damaged.empty(); ++e) {
      const size_t at = 4 + rng() % (damaged.size() > 4 ? damaged.size() - 4 : 1);
      switch (rng() % 3) {
        case 0:
          if (at < damaged.size()) damaged[at] = static_cast<char>(rng());
          break;
        case 1:
          damaged.insert(std::min(at, damaged.size()), 1, static_cast<char>(rng()));
          break;
        default:
          if (at < damaged.size()) damaged.erase(at, 1);
      }
    }
    absl::StatusOr<json::object> got = DecodeProtobufObject(damaged);
    if (got.ok()) {
      ExpectStorable(*got);
    } else {
      EXPECT_TRUE(got.status().code() == absl::StatusCode::kInvalidArgument ||
                  got.status().code() == absl::StatusCode::kUnimplemented)
          << got.status();
      EXPECT_FALSE(got.status().message().empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ClientGo, FixtureTest, ::testing::ValuesIn(FixtureNames()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(ProtobufDecode, ConfigMapDataBinaryDataAndLabels) {
  const json::object cm = DecodeFixture("configmap");
  EXPECT_EQ(cm.at("kind"), "ConfigMap");
  EXPECT_EQ(cm.at("apiVersion"), "v1");
  EXPECT_EQ(cm.at("metadata").at("name"), "c1");
  EXPECT_EQ(cm.at("metadata").at("labels"), json::parse(R"({"app":"web","tier":"front"})"));
  EXPECT_EQ(cm.at("metadata").at("annotations").at("note"), "grüße ✓");
  // An empty value in a map is kept.
  EXPECT_EQ(cm.at("data"), json::parse(R"({"a":"b","empty":"","multi":"line one\nline two\n"})"));
  EXPECT_EQ(cm.at("binaryData").at("bin"), "AAEC/v8=");
  // gogo wrote these empty; encoding/json would have left them out.
  const json::object& meta = cm.at("metadata").get_object();
  EXPECT_FALSE(meta.contains("namespace"));
  EXPECT_FALSE(meta.contains("uid"));
  EXPECT_FALSE(meta.contains("creationTimestamp"));
  EXPECT_EQ(meta.at("generation"), 0);
  EXPECT_FALSE(cm.contains("immutable"));  // a *bool, not sent
}

TEST(ProtobufDecode, ServicePortsWithBothFormsOfTargetPort) {
  const json::object svc = DecodeFixture("service");
  const json::array& ports = svc.at("spec").at("ports").get_array();
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].at("name"), "80-8080");
  EXPECT_EQ(ports[0].at("port"), 80);
  EXPECT_EQ(ports[0].at("targetPort"), 8080);
  EXPECT_EQ(ports[1].at("targetPort"), "https");
  EXPECT_EQ(svc.at("spec").at("type"), "ClusterIP");
  EXPECT_EQ(svc.at("spec").at("selector"), json::parse(R"({"app":"s1"})"));
  EXPECT_FALSE(svc.at("spec").get_object().contains("clusterIP"));
}

TEST(ProtobufDecode, PriorityClassValueAndPreemptionPolicy) {
  const json::object pc = DecodeFixture("priorityclass");
  EXPECT_EQ(pc.at("apiVersion"), "scheduling.k8s.io/v1");
  EXPECT_EQ(pc.at("value"), 10);
  EXPECT_EQ(pc.at("globalDefault"), false);
  EXPECT_EQ(pc.at("description"), "batch jobs");
  EXPECT_EQ(pc.at("preemptionPolicy"), "Never");
  const json::object low = DecodeFixture("priorityclass-negative");
  EXPECT_EQ(low.at("value"), -2147483648LL);
  EXPECT_EQ(low.at("globalDefault"), true);
  EXPECT_EQ(low.at("preemptionPolicy"), "PreemptLowerPriority");
}

TEST(ProtobufDecode, LeaseMicroTimes) {
  const json::object lease = DecodeFixture("lease");
  const json::value& spec = lease.at("spec");
  EXPECT_EQ(spec.at("holderIdentity"), "muster-scheduler-1");
  EXPECT_EQ(spec.at("leaseDurationSeconds"), 15);
  EXPECT_EQ(spec.at("leaseTransitions"), 3);
  EXPECT_EQ(spec.at("renewTime"), "2024-05-06T07:08:10.123456Z");  // nanoseconds truncated
  EXPECT_EQ(spec.at("acquireTime"), "1999-12-31T23:59:59.000000Z");
}

TEST(ProtobufDecode, PodQuantitiesTimesAndFieldsV1) {
  const json::object pod = DecodeFixture("pod");
  const json::value& meta = pod.at("metadata");
  EXPECT_EQ(meta.at("creationTimestamp"), "2024-05-06T07:08:09Z");
  EXPECT_EQ(meta.at("generation"), 2);
  EXPECT_EQ(meta.at("managedFields").at(0).at("fieldsV1"),
            json::parse(R"({"f:metadata":{"f:labels":{".":{},"f:job":{}}}})"));
  EXPECT_EQ(meta.at("managedFields").at(0).at("time"), "2024-05-06T07:08:09Z");
  const json::value& container = pod.at("spec").at("containers").at(0);
  EXPECT_EQ(container.at("resources").at("requests"),
            json::parse(R"({"cpu":"500m","memory":"1Gi"})"));
  EXPECT_EQ(container.at("resources").at("limits"),
            json::parse(R"({"memory":"1536Mi","nvidia.com/gpu":"2"})"));
  EXPECT_EQ(container.at("readinessProbe").at("httpGet").at("port"), "http");
  // An empty string in an array is kept; an env var without a value has no "value".
  EXPECT_EQ(container.at("command"), json::parse(R"(["python","-c",""])"));
  EXPECT_EQ(container.at("env").at(1), json::parse(R"({"name":"EMPTY"})"));
  EXPECT_EQ(pod.at("spec").at("activeDeadlineSeconds"), 600);
  // Structs Go embeds (VolumeSource, LocalObjectReference, EphemeralContainerCommon,
  // ProbeHandler) are written into the embedding object, not as fields of their own.
  EXPECT_EQ(pod.at("spec").at("volumes"), json::parse(R"([{"name":"config","configMap":{"name":"c1",
                "items":[{"key":"a","path":"a.txt"}]}},
                {"name":"scratch","emptyDir":{"sizeLimit":"512Mi"}}])"));
  const json::value& debugger = pod.at("spec").at("ephemeralContainers").at(0);
  EXPECT_EQ(debugger.at("name"), "debugger");
  EXPECT_EQ(debugger.at("targetContainerName"), "main");
  EXPECT_FALSE(debugger.as_object().contains("ephemeralContainerCommon"));
  EXPECT_FALSE(container.as_object().at("readinessProbe").as_object().contains("handler"));
}

TEST(ProtobufDecode, NamespaceAsKubectlCreateNamespaceSendsIt) {
  const json::object ns = DecodeFixture("namespace");
  EXPECT_EQ(ns, json::parse(R"({"kind":"Namespace","apiVersion":"v1",
      "metadata":{"name":"n1","generation":0,"labels":{"team":"ml"}},"spec":{},"status":{}})"));
}

TEST(ProtobufDecode, DeleteOptionsOfACoreClient) {
  const json::object options = DecodeFixture("deleteoptions");
  EXPECT_EQ(options, json::parse(R"({"kind":"DeleteOptions","apiVersion":"v1",
      "gracePeriodSeconds":0,"preconditions":{"uid":"7b0c3bd1-0f4c-4a3e-9d2b-93c1c6b0a001"},
      "propagationPolicy":"Foreground","dryRun":["All"]})"));
  // The same kind under meta.k8s.io and under another group.
  EXPECT_TRUE(DecodeProtobufObject(Envelope("meta.k8s.io/v1", "DeleteOptions", "")).ok());
  EXPECT_EQ(Decode(Envelope("policy/v1", "DeleteOptions", Bytes(4, "Orphan"))),
            json::parse(R"({"kind":"DeleteOptions","apiVersion":"policy/v1",
                "propagationPolicy":"Orphan"})"));
}

TEST(ProtobufDecode, EvictionWithDeleteOptions) {
  const json::object eviction = DecodeFixture("eviction");
  EXPECT_EQ(eviction.at("apiVersion"), "policy/v1");
  EXPECT_EQ(eviction.at("metadata").at("name"), "trainer-0");
  EXPECT_EQ(eviction.at("deleteOptions").at("propagationPolicy"), "Background");
}

TEST(ProtobufDecode, AccessReviewsAndExtraValues) {
  const json::object ssar = DecodeFixture("selfsubjectaccessreview");
  EXPECT_EQ(ssar.at("apiVersion"), "authorization.k8s.io/v1");
  EXPECT_EQ(ssar.at("spec").at("resourceAttributes"),
            json::parse(R"({"namespace":"default","verb":"list","resource":"pods"})"));
  EXPECT_EQ(ssar.at("status").at("allowed"), false);
  const json::object sar = DecodeFixture("subjectaccessreview");
  EXPECT_EQ(sar.at("spec").at("extra"), json::parse(R"({"none":[],"scopes":["view","edit"]})"));
  EXPECT_EQ(DecodeFixture("selfsubjectreview").at("apiVersion"), "authentication.k8s.io/v1");
}

TEST(ProtobufDecode, RawExtensionsHoldJsonOrANestedEnvelope) {
  const json::object list = DecodeFixture("list");
  const json::array& items = list.at("items").get_array();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], json::parse(
                          R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c2"},
                              "data":{"k":"v"}})"));
  EXPECT_EQ(items[1].at("kind"), "Namespace");
  EXPECT_EQ(items[1].at("metadata").at("name"), "n1");
  // Neither JSON nor an envelope.
  absl::StatusOr<json::object> bad =
      DecodeProtobufObject(Envelope("v1", "List", Bytes(2, Bytes(1, "{"))));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("List.items[0]: the raw bytes are neither JSON"));
  // An empty RawExtension is Go's null: kept in an array.
  EXPECT_EQ(Decode(Envelope("v1", "List", Bytes(2, ""))).at("items"), json::parse("[null]"));
}

TEST(ProtobufDecode, StringsThatAreNotUtf8GetReplacementCharacters) {
  const json::object cm = Decode(ConfigMap("c", Entry(2, "k\xff", "v\xc3")));
  EXPECT_EQ(cm.at("data"), json::parse("{\"k\\ufffd\":\"v\\ufffd\"}"));
  ExpectStorable(cm);
}

TEST(ProtobufDecode, DuplicateMapKeysKeepTheLast) {
  const json::object cm = Decode(ConfigMap("c", Entry(2, "k", "first") + Entry(2, "k", "second")));
  EXPECT_EQ(cm.at("data"), json::parse(R"({"k":"second"})"));
}

TEST(ProtobufDecode, TimesAsGoWritesThem) {
  auto created = [](std::string_view time) {
    return Decode(Envelope("v1", "ConfigMap", Bytes(1, Bytes(1, "c") + Bytes(8, time))))
        .at("metadata");
  };
  EXPECT_EQ(created(Number(1, 1714979289)).at("creationTimestamp"), "2024-05-06T07:08:09Z");
  // Time drops nanoseconds; the epoch is a time like any other.
  EXPECT_EQ(created(Number(1, 1714979289) + Number(2, 999)).at("creationTimestamp"),
            "2024-05-06T07:08:09Z");
  EXPECT_EQ(created(Number(1, 0)).at("creationTimestamp"), "1970-01-01T00:00:00Z");
  // Empty (what gogo writes for a zero Time) and Go's zero time itself: left out.
  EXPECT_FALSE(created("").as_object().contains("creationTimestamp"));
  EXPECT_FALSE(created(Number(1, static_cast<uint64_t>(int64_t{-62135596800})))
                   .as_object()
                   .contains("creationTimestamp"));
  absl::StatusOr<json::object> far = DecodeProtobufObject(
      Envelope("v1", "ConfigMap", Bytes(1, Bytes(8, Number(1, 253402300800)))));
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(std::string(far.status().message()),
              HasSubstr("ConfigMap.metadata.creationTimestamp: Time.MarshalJSON: year outside"));
}

// --- What is refused -----------------------------------------------------------------------------

void ExpectRefused(std::string_view body, std::string_view want_message,
                   absl::StatusCode want = absl::StatusCode::kInvalidArgument) {
  absl::StatusOr<json::object> got = DecodeProtobufObject(body);
  ASSERT_FALSE(got.ok()) << json::serialize(*got);
  EXPECT_EQ(got.status().code(), want) << got.status();
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(want_message));
}

TEST(ProtobufRefused, WithoutTheMagicNumber) {
  ExpectRefused("", "magic number");
  ExpectRefused("k8s", "magic number");
  ExpectRefused(R"({"kind":"ConfigMap"})", "magic number");
  ExpectRefused(std::string("k8s\x01", 4) + TypeMeta("v1", "ConfigMap"), "magic number");
}

TEST(ProtobufRefused, AnEnvelopeWithoutKind) {
  ExpectRefused(kMagic, "names no apiVersion or no kind");
  ExpectRefused(kMagic + Bytes(1, Bytes(2, "ConfigMap")), "names no apiVersion or no kind");
}

TEST(ProtobufRefused, TruncatedVarintsAndLengths) {
  ExpectRefused(kMagic + "\x0a", "truncated length at byte 0");
  ExpectRefused(kMagic + "\x0a\x80", "truncated length");
  ExpectRefused(kMagic + "\xff", "truncated or overlong field key");
  ExpectRefused(kMagic + "\x08\xff\xff", "truncated varint");
  // A varint of 11 bytes.
  ExpectRefused(kMagic + "\x08" + std::string(10, '\xff') + "\x01", "truncated varint");
  ExpectRefused(ConfigMap("c", "\x10"), "ConfigMap.data: truncated varint");
  ExpectRefused(ConfigMap("c", Key(2, 2) + "\x05" + "ab"), "ConfigMap.data: length 5");
}

TEST(ProtobufRefused, HugeLengths) {
  ExpectRefused(kMagic + "\x12\xff\xff\xff\xff\x0f", "runs past the end");
  ExpectRefused(kMagic + "\x12\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "runs past the end");
  ExpectRefused(ConfigMap("c", Key(3, 2) + Varint(uint64_t{1} << 40)),
                "ConfigMap.binaryData: length 1099511627776");
}

TEST(ProtobufRefused, WrongWireTypes) {
  // typeMeta as a number.
  ExpectRefused(kMagic + Number(1, 5), "field typeMeta (message) has the wrong wire type");
  // metadata as a number, a name as a number, a port as a string.
  ExpectRefused(Envelope("v1", "ConfigMap", Number(1, 7)), "ConfigMap: field metadata");
  ExpectRefused(Envelope("v1", "ConfigMap", Bytes(1, Number(1, 7))),
                "ConfigMap.metadata: field name (string) has the wrong wire type: a varint");
  const std::string port = Bytes(1, Bytes(3, "80"));
  ExpectRefused(Envelope("v1", "Service", Bytes(2, port)),
                "Service.spec.ports[0]: field port (int32) has the wrong wire type");
  // Invalid wire types, an end-group tag with no group, field number 0.
  ExpectRefused(kMagic + "\x0f", "invalid wire type 7");
  ExpectRefused(ConfigMap("c", "\x16"), "invalid wire type 6");
  ExpectRefused(ConfigMap("c", Key(9, 4)), "end-group tag without its group");
  ExpectRefused(ConfigMap("c", Key(9, 3)), "group without its end tag");
  ExpectRefused(ConfigMap("c", "\x02\x00"), "invalid field number 0");
}

TEST(ProtobufRefused, UnknownFieldsAreSkipped) {
  // As gogo's decoder skips them (a newer client's field).
  const json::object cm = Decode(
      ConfigMap("c", Number(99, 1) + Key(98, 3) + Number(1, 2) + Key(98, 4) + Bytes(97, "x")));
  EXPECT_EQ(cm.at("metadata").at("name"), "c");
  EXPECT_EQ(cm.size(), 3u);
}

TEST(ProtobufRefused, DeepNesting) {
  // Groups nested past the limit (the parser's recursion limit, then the walk that explains it).
  ExpectRefused(kMagic + std::string(100000, '\x0b'), "nested deeper than 32 levels");
  ExpectRefused(ConfigMap("c", std::string(5000, '\x5b')), "nested deeper than 32 levels");
  // v1.Lists within lists: each adds two levels of JSON (the object and its items).
  auto nested_lists = [](int lists) {
    std::string body = Envelope("v1", "List", "");
    for (int i = 1; i < lists; ++i) body = Envelope("v1", "List", Bytes(2, Bytes(1, body)));
    return body;
  };
  const json::object deepest = Decode(nested_lists(16));  // 31 levels
  ExpectStorable(deepest);
  ExpectRefused(nested_lists(17), "the object nests deeper than 32 levels");
  ExpectRefused(nested_lists(1000), "deeper than 32 levels");
  // JSON in a RawExtension counts too.
  std::string json_text = "1";
  for (int i = 0; i < 30; ++i) json_text = "[" + json_text + "]";
  ExpectStorable(Decode(Envelope("v1", "List", Bytes(2, Bytes(1, json_text)))));  // 2 + 30
  ExpectRefused(Envelope("v1", "List", Bytes(2, Bytes(1, "[" + json_text + "]"))),
                "List.items[0]: the object nests deeper than 32 levels");
}

TEST(ProtobufRefused, ContentEncodingAndContentType) {
  ExpectRefused(ConfigMap("c") + Bytes(3, "gzip"), "contentEncoding \"gzip\" is not supported");
  ExpectRefused(ConfigMap("c") + Bytes(4, "application/cbor"),
                "contentType \"application/cbor\" is not supported");
  // Empty ones, as client-go writes them, and a JSON raw, as the Unknown allows.
  EXPECT_TRUE(DecodeProtobufObject(ConfigMap("c") + Bytes(3, "") + Bytes(4, "")).ok());
  EXPECT_EQ(Decode(Envelope("v1", "ConfigMap", R"({"kind":"ConfigMap","data":{"a":"b"}})",
                            Bytes(4, "application/json")))
                .at("data")
                .at("a"),
            "b");
}

TEST(ProtobufRefused, RawThatIsNotTheKind) {
  ExpectRefused(Envelope("v1", "ConfigMap", "\xff\xff"), "ConfigMap: truncated or overlong");
  ExpectRefused(Envelope("v1", "Pod", Bytes(2, Key(2, 2) + Varint(10) + "ab")),
                "Pod.spec.containers: length 10");
}

TEST(ProtobufRefused, IntOrStringOfAnUnknownType) {
  const std::string target = Bytes(4, Number(1, 2) + Number(2, 80));
  ExpectRefused(Envelope("v1", "Service", Bytes(2, Bytes(1, target))),
                "Service.spec.ports[0].targetPort: IntOrString of type 2");
}

TEST(ProtobufRefused, KindsWithoutASchemaAre415) {
  const auto unimplemented = absl::StatusCode::kUnimplemented;
  ExpectRefused(Envelope("apps/v1", "Deployment", ""), "no protobuf schema for \"apps/v1\"",
                unimplemented);
  ExpectRefused(Envelope("v1", "Container", ""), "\"Container\"", unimplemented);
  ExpectRefused(Envelope("core/v1", "ConfigMap", ""), "", unimplemented);
  ExpectRefused(Envelope("scheduling.volcano.sh/v1beta1", "PriorityClass", ""), "", unimplemented);
  ExpectRefused(Envelope("v1", "configMap", ""), "", unimplemented);
  ExpectRefused(Envelope("v1", "Config.Map", ""), "", unimplemented);
  ExpectRefused(Envelope("v1/v1", "ConfigMap", ""), "", unimplemented);
  ExpectRefused(Envelope("V1", "ConfigMap", ""), "", unimplemented);
  // A kind of a served group that muster has no schema for (v2 of scheduling).
  ExpectRefused(Envelope("scheduling.k8s.io/v2", "PriorityClass", ""), "", unimplemented);
}

TEST(ProtobufDecode, ThreadsDecodingAtOnce) {
  // The schemas load on first use: several threads may race to it.
  const std::string body = Fixture("pod.pb");
  std::vector<std::thread> threads;
  std::vector<int> decoded(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) decoded[t] += DecodeProtobufObject(body).ok() ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(decoded, ::testing::Each(50));
}

}  // namespace
}  // namespace muster::apiserver
