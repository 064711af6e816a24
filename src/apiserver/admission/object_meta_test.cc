#include "apiserver/admission/admission_test_util.h"

// Admission of every kind's metadata (object_meta.cc) and NamespaceLifecycle (namespaces.cc).

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

// --- Metadata ------------------------------------------------------------------------------------

TEST_F(AdmissionTest, NameIsRequired) {
  json::object pod = Pod();
  pod["metadata"].as_object().erase("name");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->reason, "Invalid");
  EXPECT_EQ(err->message,
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].reason, "FieldValueRequired");
  EXPECT_EQ(err->causes[0].message, "Required value: name or generateName is required");
  EXPECT_EQ(err->causes[0].field, "metadata.name");
}

TEST_F(AdmissionTest, NameMustBeDns1123Subdomain) {
  json::object pod = Pod();
  pod["metadata"].as_object()["name"] = "Web_1";
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(
      err->message,
      "Pod \"Web_1\" is invalid: metadata.name: Invalid value: \"Web_1\": a lowercase RFC "
      "1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
      "must start and end with an alphanumeric character (e.g. 'example.com', regex used "
      "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  EXPECT_EQ(err->causes[0].reason, "FieldValueInvalid");
}

TEST_F(AdmissionTest, NamespaceNamesAreDns1123Labels) {
  json::object ns = Obj(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team.a"}})");
  auto err = Create(Namespaces(), ns);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Namespace \"team.a\" is invalid: metadata.name: Invalid value: \"team.a\": must not "
            "contain dots");
}

TEST_F(AdmissionTest, NamespacedKindsNeedANamespaceClusterScopedOnesLoseIt) {
  json::object pod = Pod();
  pod["metadata"].as_object().erase("namespace");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "Pod \"p\" is invalid: metadata.namespace: Required value");

  json::object node = Created(Nodes(), Obj(R"({"apiVersion":"v1","kind":"Node",
      "metadata":{"name":"n1","namespace":"default"}})"));
  EXPECT_FALSE(node["metadata"].as_object().contains("namespace"));
}

TEST_F(AdmissionTest, LabelKeysAndValuesAreChecked) {
  json::object pod = Pod();
  pod["metadata"].as_object()["labels"] = Obj(R"({"bad key":"ok","app":"-x"})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(
      err->message,
      "Pod \"p\" is invalid: [metadata.labels: Invalid value: \"-x\": a valid label must be an "
      "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
      "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
      "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), metadata.labels: "
      "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' "
      "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
      "'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]");
  ASSERT_EQ(err->causes.size(), 2u);
  EXPECT_EQ(err->causes[1].field, "metadata.labels");
}

TEST_F(AdmissionTest, OwnerReferencesNeedUid) {
  json::object pod = Pod();
  pod["metadata"].as_object()["ownerReferences"] =
      json::parse(R"([{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"j"}])");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: metadata.ownerReferences.uid: Invalid value: \"\": uid must "
            "not be empty");
}

TEST_F(AdmissionTest, CreateInTerminatingNamespaceIsForbidden) {
  store_.Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
      "metadata":{"name":"old"},"status":{"phase":"Terminating"}})"));
  json::object pod = Pod();
  pod["metadata"].as_object()["namespace"] = "old";
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 403);
  EXPECT_EQ(err->reason, "Forbidden");
  EXPECT_EQ(err->message,
            "pods \"p\" is forbidden: unable to create new content in namespace old because it "
            "is being terminated");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].reason, "NamespaceTerminating");
}

TEST_F(AdmissionTest, UpdateKeepsSystemFieldsAndNames) {
  json::object old = Created(Pods(), Pod());
  old["metadata"].as_object()["uid"] = "u-1";
  old["metadata"].as_object()["creationTimestamp"] = "2024-01-01T00:00:00Z";

  json::object next = old;
  next["metadata"].as_object().erase("uid");
  next["metadata"].as_object()["creationTimestamp"] = "2030-01-01T00:00:00Z";
  ASSERT_FALSE(Update(Pods(), old, next));
  EXPECT_EQ(next["metadata"].as_object()["uid"], "u-1");
  EXPECT_EQ(next["metadata"].as_object()["creationTimestamp"], "2024-01-01T00:00:00Z");

  json::object renamed = old;
  renamed["metadata"].as_object()["name"] = "q";
  auto err = Update(Pods(), old, renamed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"q\" is invalid: metadata.name: Invalid value: \"q\": field is "
            "immutable");
}

TEST_F(AdmissionTest, NoNewFinalizersWhileDeleting) {
  json::object old = Created(Pods(), Pod());
  old["metadata"].as_object()["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  json::object next = old;
  next["metadata"].as_object()["finalizers"] = json::array{"example.com/x"};
  auto err = Update(Pods(), old, next);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be "
            "added if the object is being deleted, found new finalizers "
            "[]string{\"example.com/x\"}");
}

}  // namespace
}  // namespace muster::apiserver::admission_test
