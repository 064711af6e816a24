#pragma once

// What the admission tests (admission/*_test.cc, one file per kind as admission/ is split) share:
// a real store in a temporary directory, the resources, a fixture that admits through Admit with
// a default Namespace and an Open and a Closed Queue stored, and object builders.

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/admission/admission.h"
#include "apiserver/api_error.h"
#include "apiserver/descriptors/resources.h"
#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store.h"

namespace muster::apiserver::admission_test {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

inline json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

// A real store in a fresh temporary directory, removed afterwards.
class TempStore {
 public:
  TempStore() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "admission-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    auto opened = store::Store::Open(dir_ + "/db");
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (opened.ok()) store_ = std::move(*opened);
  }
  ~TempStore() {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  store::Store& get() { return *store_; }

  void Put(const ResourceInfo& res, json::object obj) {
    const json::object& meta = obj.at("metadata").as_object();
    std::string ns =
        meta.contains("namespace") ? std::string(meta.at("namespace").as_string()) : "";
    store::Op op;
    op.kind = store::OpKind::kCreate;
    op.key = {res.StoreResource(), ns, std::string(meta.at("name").as_string())};
    op.object = std::move(obj);
    auto stored = store_->Commit({std::move(op)});
    ASSERT_TRUE(stored.ok()) << stored.status();
  }

 private:
  std::string dir_;
  std::unique_ptr<store::Store> store_;
};

inline const ResourceInfo& Res(std::string_view group, std::string_view version,
                               std::string_view resource) {
  const ResourceInfo* info = FindResource(group, version, resource);
  EXPECT_NE(info, nullptr) << resource;
  return *info;
}
inline const ResourceInfo& Pods() { return Res("", "v1", "pods"); }
inline const ResourceInfo& Nodes() { return Res("", "v1", "nodes"); }
inline const ResourceInfo& Namespaces() { return Res("", "v1", "namespaces"); }
inline const ResourceInfo& Events() { return Res("", "v1", "events"); }
inline const ResourceInfo& Services() { return Res("", "v1", "services"); }
inline const ResourceInfo& PriorityClasses() {
  return Res("scheduling.k8s.io", "v1", "priorityclasses");
}
inline const ResourceInfo& Jobs() { return Res("batch.volcano.sh", "v1alpha1", "jobs"); }
inline const ResourceInfo& PodGroups() {
  return Res("scheduling.volcano.sh", "v1beta1", "podgroups");
}
inline const ResourceInfo& BatchJobs() { return Res("batch", "v1", "jobs"); }
inline const ResourceInfo& CronJobs() { return Res("batch", "v1", "cronjobs"); }
inline const ResourceInfo& Queues() { return Res("scheduling.volcano.sh", "v1beta1", "queues"); }

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
        "metadata":{"name":"default"},"spec":{"weight":1},"status":{"state":"Open"}})"));
    store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
        "metadata":{"name":"closed"},"spec":{"weight":1},"status":{"state":"Closed"}})"));
    store_.Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
        "metadata":{"name":"default"},"status":{"phase":"Active"}})"));
  }

  std::optional<ApiError> Create(const ResourceInfo& res, json::object& obj) {
    AdmissionRequest req;
    req.resource = &res;
    req.store = &store_.get();
    req.now_unix = 1700000000;
    return Admit(req, obj);
  }
  std::optional<ApiError> Update(const ResourceInfo& res, const json::object& old,
                                 json::object& obj, std::string subresource = "") {
    AdmissionRequest req;
    req.resource = &res;
    req.subresource = std::move(subresource);
    req.old = &old;
    req.store = &store_.get();
    req.now_unix = 1700000000;
    return Admit(req, obj);
  }
  // Admits `obj` as a create and fails the test on refusal.
  json::object Created(const ResourceInfo& res, json::object obj) {
    std::optional<ApiError> err = Create(res, obj);
    EXPECT_FALSE(err.has_value()) << err->message;
    return obj;
  }

  TempStore store_;
};

inline json::object Pod(
    std::string_view spec = R"({"containers":[{"name":"c","image":"nginx:1.25"}]})") {
  json::object pod = Obj(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","namespace":"default"}})");
  pod["spec"] = json::parse(spec);
  return pod;
}

inline json::object Job(std::string_view spec) {
  json::object job = Obj(R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",
      "metadata":{"name":"j","namespace":"default"}})");
  job["spec"] = json::parse(spec);
  return job;
}

inline constexpr std::string_view kTwoTasks = R"({"tasks":[
    {"replicas":1,"template":{"spec":{"containers":[{"name":"m","image":"img"}]}}},
    {"replicas":2,"template":{"spec":{"containers":[{"name":"w","image":"img"}]}}}]})";

inline std::string JobDenied(std::string_view msg) {
  return std::string("admission webhook \"validatejob.volcano.sh\" denied the request: ") +
         std::string(msg);
}

}  // namespace muster::apiserver::admission_test
