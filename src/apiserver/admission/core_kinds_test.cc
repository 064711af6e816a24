#include "apiserver/admission/admission_test_util.h"

// Admission of Namespaces, Events and PriorityClasses (namespaces.cc, events.cc,
// priorityclasses.cc).

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
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

}  // namespace
}  // namespace muster::apiserver::admission_test
