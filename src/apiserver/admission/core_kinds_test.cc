#include "apiserver/admission/admission_test_util.h"

// Admission of Namespaces, Events, Nodes, Services and PriorityClasses (namespaces.cc,
// events.cc, nodes.cc, services.cc, priorityclasses.cc).

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

// --- Other core kinds ----------------------------------------------------------------------------

TEST_F(AdmissionTest, NamespaceDefaults) {
  json::object ns = Created(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
      "metadata":{"name":"team-a"}})"));
  EXPECT_EQ(ns["status"].at("phase"), "Active");
  EXPECT_EQ(ns["spec"].at("finalizers").at(0), "kubernetes");
  EXPECT_EQ(ns["metadata"].at("labels").at("kubernetes.io/metadata.name"), "team-a");
}

TEST_F(AdmissionTest, EventsNeedAnInvolvedObjectInTheirNamespace) {
  json::object bare = Obj(R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"name":"e","namespace":"default"}})");
  auto err = Create(Events(), bare);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "Event \"e\" is invalid: involvedObject: Required value");

  json::object elsewhere = Obj(R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"name":"e","namespace":"default"},
      "involvedObject":{"kind":"Pod","name":"p","namespace":"other"}})");
  err = Create(Events(), elsewhere);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Event \"e\" is invalid: involvedObject.namespace: Invalid value: \"other\": does "
            "not match event.namespace");

  Created(Events(), Obj(R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"name":"e","namespace":"default"},
      "involvedObject":{"kind":"Node","name":"n"}})"));
}

// muster.dev/gpu-topology, the NVLinks the scheduler's nvlink plugin reads (api/gpu_topology.h):
// kept when it reads, refused naming the annotation when it does not.
TEST_F(AdmissionTest, ANodesGpuTopologyMustBeReadable) {
  auto node = [](std::string_view topology) {
    return Obj(fmt::format(R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"dgx",
        "annotations":{{"muster.dev/gpu-topology":"{}"}}}}}})",
                           topology));
  };
  json::object good = Created(Nodes(), node("v1;gpus=8;nvlink=0-3:2,4-7:2"));
  EXPECT_EQ(good["metadata"].at("annotations").at("muster.dev/gpu-topology"),
            "v1;gpus=8;nvlink=0-3:2,4-7:2");
  json::object out_of_range = node("v1;gpus=8;nvlink=0-9:2");
  std::optional<ApiError> err = Create(Nodes(), out_of_range);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "Node \"dgx\" is invalid: metadata.annotations[muster.dev/gpu-topology]: Invalid "
            "value: \"v1;gpus=8;nvlink=0-9:2\": nvlink: \"0-9:2\": GPU 9 is out of range (gpus=8, "
            "so 0 to 7)");
  json::object twice = node("v1;gpus=8;nvlink=0-1:2,1-0:1");
  err = Create(Nodes(), twice);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, ::testing::HasSubstr(
                                "metadata.annotations[muster.dev/gpu-topology]: Invalid value: "
                                "\"v1;gpus=8;nvlink=0-1:2,1-0:1\": nvlink: \"1-0:1\": GPUs 0 and 1 "
                                "are given twice"));
  Created(Nodes(), Obj(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"t4"}})"));
}

TEST_F(AdmissionTest, PriorityClassRules) {
  json::object pc = Created(PriorityClasses(), Obj(R"({"apiVersion":"scheduling.k8s.io/v1",
      "kind":"PriorityClass","metadata":{"name":"high"},"value":1000})"));
  EXPECT_EQ(pc.at("preemptionPolicy"), "PreemptLowerPriority");

  json::object missing = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"x"}})");
  auto err = Create(PriorityClasses(), missing);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"x\" is invalid: value: Required value");

  json::object huge = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"x"},"value":1000000001})");
  err = Create(PriorityClasses(), huge);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"x\" is invalid: value: Forbidden: maximum allowed "
            "value of a user defined priority is 1000000000");

  json::object system = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"system-x"},"value":1})");
  err = Create(PriorityClasses(), system);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"system-x\" is invalid: metadata.name: Forbidden: "
            "priority class names with 'system-' prefix are reserved for system use only. error: "
            "system-x is not a known system priority class");

  json::object changed = pc;
  changed["value"] = 2000;
  err = Update(PriorityClasses(), pc, changed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"high\" is invalid: value: Forbidden: may not be "
            "changed in an update.");
}

TEST_F(AdmissionTest, OnlyOneGlobalDefaultPriorityClass) {
  store_.Put(PriorityClasses(), Obj(R"({"apiVersion":"scheduling.k8s.io/v1",
      "kind":"PriorityClass","metadata":{"name":"first"},"value":1,"globalDefault":true})"));
  json::object second = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"second"},"value":2,"globalDefault":true})");
  auto err = Create(PriorityClasses(), second);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 403);
  EXPECT_EQ(err->message,
            "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is "
            "already marked as default. Only one default can exist");
}

json::object ServiceObj(std::string_view name, std::string_view spec) {
  return Obj(fmt::format(R"({{"apiVersion":"v1","kind":"Service",
      "metadata":{{"name":"{}","namespace":"default"}},"spec":{}}})",
                         name, spec));
}

TEST_F(AdmissionTest, ServiceDefaultsAndAClusterIpOfItsOwn) {
  json::object web = Created(Services(), ServiceObj("web", R"({"selector":{"app":"web"},
      "ports":[{"port":80}]})"));
  const json::object& spec = web["spec"].as_object();
  EXPECT_EQ(spec.at("type"), "ClusterIP");
  EXPECT_EQ(spec.at("sessionAffinity"), "None");
  EXPECT_EQ(spec.at("internalTrafficPolicy"), "Cluster");
  EXPECT_EQ(spec.at("ipFamilyPolicy"), "SingleStack");
  EXPECT_EQ(spec.at("ipFamilies").at(0), "IPv4");
  EXPECT_EQ(spec.at("ports").at(0).at("protocol"), "TCP");
  EXPECT_EQ(spec.at("ports").at(0).at("targetPort"), 80);
  const std::string ip(spec.at("clusterIP").as_string());
  EXPECT_TRUE(ip.starts_with("10.9") || ip.starts_with("10.10") || ip.starts_with("10.11")) << ip;
  EXPECT_EQ(spec.at("clusterIPs").at(0).as_string(), ip);
  // The same Service gets the same address; another Service never gets one that is taken.
  EXPECT_EQ(Created(Services(), ServiceObj("web", R"({"ports":[{"port":80}]})"))["spec"]
                .at("clusterIP")
                .as_string(),
            ip);
  store_.Put(Services(), web);
  json::object other = Created(Services(), ServiceObj("api", R"({"ports":[{"port":80}]})"));
  EXPECT_NE(other["spec"].at("clusterIP").as_string(), ip);
  json::object clash =
      ServiceObj("clash", fmt::format(R"({{"clusterIP":"{}","ports":[{{"port":1}}]}})", ip));
  auto err = Create(Services(), clash);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            fmt::format("Service \"clash\" is invalid: spec.clusterIPs: Invalid value: \"{0}\": "
                        "failed to allocate IP {0}: provided IP is already allocated",
                        ip));

  // Headless stays headless.
  json::object headless = Created(Services(), ServiceObj("job", R"({"clusterIP":"None",
      "selector":{"volcano.sh/job-name":"job"}})"));
  EXPECT_EQ(headless["spec"].at("clusterIPs").at(0), "None");
}

TEST_F(AdmissionTest, ServiceUpdatesKeepWhatWasAllocated) {
  json::object svc = Created(Services(), ServiceObj("np", R"({"type":"NodePort",
      "ports":[{"port":80},{"port":53,"protocol":"UDP"}]})"));
  const json::value ip = svc["spec"].at("clusterIP");
  const json::value node_port = svc["spec"].at("ports").at(0).at("nodePort");
  EXPECT_GE(node_port.to_number<int64_t>(), 30000);
  EXPECT_LE(node_port.to_number<int64_t>(), 32767);
  EXPECT_EQ(svc["spec"].at("externalTrafficPolicy"), "Cluster");
  // `kubectl apply` of the same file: no clusterIP, no nodePort.
  json::object applied = ServiceObj("np", R"({"type":"NodePort",
      "ports":[{"port":80},{"port":53,"protocol":"UDP"}]})");
  ASSERT_FALSE(Update(Services(), svc, applied));
  EXPECT_EQ(applied["spec"].at("clusterIP"), ip);
  EXPECT_EQ(applied["spec"].at("ports").at(0).at("nodePort"), node_port);
  EXPECT_EQ(applied["spec"].at("ports").at(1).at("nodePort"),
            svc["spec"].at("ports").at(1).at("nodePort"));

  json::object moved = ServiceObj("np", R"({"type":"NodePort","clusterIP":"10.96.0.9",
      "ports":[{"port":80}]})");
  auto err = Update(Services(), svc, moved);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "Service \"np\" is invalid: spec.clusterIPs[0]: Invalid value: "
                          "\"10.96.0.9\": may not change once set");
}

TEST_F(AdmissionTest, ServiceRefusalsNameTheField) {
  auto refused = [&](std::string_view spec) {
    json::object svc = ServiceObj("bad", spec);
    std::optional<ApiError> err = Create(Services(), svc);
    return err ? err->message : std::string("admitted");
  };
  EXPECT_EQ(refused(R"({"type":"Cluster","ports":[{"port":80}]})"),
            "Service \"bad\" is invalid: spec.type: Unsupported value: \"Cluster\": supported "
            "values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"");
  EXPECT_EQ(refused(R"({"ports":[{"port":0}]})"),
            "Service \"bad\" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 "
            "and 65535, inclusive");
  EXPECT_EQ(refused(R"({"ports":[{"port":80,"protocol":"HTTP"}]})"),
            "Service \"bad\" is invalid: spec.ports[0].protocol: Unsupported value: \"HTTP\": "
            "supported values: \"SCTP\", \"TCP\", \"UDP\"");
  EXPECT_EQ(refused(R"({"selector":{"app":"x"}})"),
            "Service \"bad\" is invalid: spec.ports: Required value");
  EXPECT_EQ(refused(R"({"type":"ExternalName"})"),
            "Service \"bad\" is invalid: spec.externalName: Required value");
}

}  // namespace
}  // namespace muster::apiserver::admission_test
