#include "apiserver/lifecycle.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "boost/json.hpp"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kNow = 1700000000;  // 2023-11-14T22:13:20Z

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

const ResourceInfo& Res(std::string_view group, std::string_view version,
                        std::string_view resource) {
  const ResourceInfo* info = FindResource(group, version, resource);
  EXPECT_NE(info, nullptr) << resource;
  return *info;
}
const ResourceInfo& Pods() { return Res("", "v1", "pods"); }
const ResourceInfo& Nodes() { return Res("", "v1", "nodes"); }
const ResourceInfo& Namespaces() { return Res("", "v1", "namespaces"); }
const ResourceInfo& Jobs() { return Res("batch.volcano.sh", "v1alpha1", "jobs"); }
const ResourceInfo& PodGroups() { return Res("scheduling.volcano.sh", "v1beta1", "podgroups"); }
const ResourceInfo& Queues() { return Res("scheduling.volcano.sh", "v1beta1", "queues"); }

// Builds pods: MakePod("p").Node("n1").OwnedBy(job).Obj().
class MakePod {
 public:
  explicit MakePod(std::string name) {
    obj_ = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"default"},
        "spec":{"terminationGracePeriodSeconds":30,"containers":[{"name":"c","image":"i"}]},
        "status":{"phase":"Pending"}})")
               .as_object();
    meta()["name"] = name;
    meta()["uid"] = "uid-pod-" + name;
  }
  MakePod& Ns(std::string ns) {
    meta()["namespace"] = ns;
    return *this;
  }
  MakePod& Node(std::string node) {
    obj_["spec"].as_object()["nodeName"] = node;
    obj_["status"].as_object()["phase"] = "Running";
    return *this;
  }
  MakePod& Phase(std::string phase) {
    obj_["status"].as_object()["phase"] = phase;
    return *this;
  }
  // `blocks`: blockOwnerDeletion, as controllers set it on what they create.
  MakePod& OwnedBy(const json::object& owner, bool blocks = true) {
    const json::object& m = owner.at("metadata").as_object();
    json::value& refs = meta()["ownerReferences"];
    if (!refs.is_array()) refs = json::array();
    refs.as_array().push_back(json::object{{"apiVersion", owner.at("apiVersion")},
                                           {"kind", owner.at("kind")},
                                           {"name", m.at("name")},
                                           {"uid", m.at("uid")},
                                           {"controller", true},
                                           {"blockOwnerDeletion", blocks}});
    return *this;
  }
  MakePod& Finalizer(std::string f) {
    json::value& list = meta()["finalizers"];
    if (!list.is_array()) list = json::array();
    list.as_array().emplace_back(f);
    return *this;
  }
  json::object Obj() const { return obj_; }

 private:
  json::object& meta() { return obj_["metadata"].as_object(); }
  json::object obj_;
};

json::object VolcanoJob(std::string name) {
  json::object job = Obj(R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",
      "metadata":{"namespace":"default"},"spec":{"minAvailable":2,"queue":"default"}})");
  job["metadata"].as_object()["name"] = name;
  job["metadata"].as_object()["uid"] = "uid-job-" + name;
  return job;
}

json::object PodGroupOf(const json::object& job) {
  json::object pg = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup",
      "metadata":{"namespace":"default"},"spec":{"minMember":2}})");
  const json::object& m = job.at("metadata").as_object();
  pg["metadata"].as_object()["name"] = std::string(m.at("name").as_string()) + "-pg";
  pg["metadata"].as_object()["uid"] = "uid-pg";
  pg["metadata"].as_object()["ownerReferences"] =
      json::array{json::object{{"apiVersion", "batch.volcano.sh/v1alpha1"},
                               {"kind", "Job"},
                               {"name", m.at("name")},
                               {"uid", m.at("uid")},
                               {"controller", true}}};
  return pg;
}

DeleteOptions Grace(int64_t seconds) {
  DeleteOptions options;
  options.grace_period_seconds = seconds;
  return options;
}
DeleteOptions Precondition(int64_t revision) {
  DeleteOptions options;
  options.precondition_revision = revision;
  return options;
}
DeleteOptions Policy(std::string policy) {
  DeleteOptions options;
  options.propagation_policy = std::move(policy);
  return options;
}
DeleteOptions DryRun() {
  DeleteOptions options;
  options.dry_run = true;
  return options;
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lifecycle-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    auto opened = store::Store::Open(dir_ + "/db");
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(*opened);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static store::Key KeyOf(const ResourceInfo& res, const json::object& obj) {
    const json::object& meta = obj.at("metadata").as_object();
    std::string ns = res.namespaced ? std::string(meta.at("namespace").as_string()) : "";
    return {res.StoreResource(), ns, std::string(meta.at("name").as_string())};
  }
  store::Object Put(const ResourceInfo& res, json::object obj) {
    store::Op op;
    op.kind = store::OpKind::kCreate;
    op.key = KeyOf(res, obj);
    op.object = std::move(obj);
    auto stored = store_->Commit({std::move(op)});
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? (*stored)[0] : store::Object{};
  }
  std::optional<store::Object> Get(const ResourceInfo& res, std::string ns, std::string name) {
    auto got = store_->Get({res.StoreResource(), res.namespaced ? ns : "", name});
    if (!got.ok()) return std::nullopt;
    return *got;
  }
  static json::object Parse(const store::Object& o) { return json::parse(*o.json).as_object(); }
  std::vector<std::string> Names(const ResourceInfo& res, std::string ns = "") {
    std::vector<std::string> names;
    for (const store::Object& o : store_->List(res.StoreResource(), ns).items) {
      names.push_back(o.key.name);
    }
    return names;
  }
  // Plans a delete of the live object and commits it.
  absl::StatusOr<DeletePlan> Delete(const ResourceInfo& res, std::string ns, std::string name,
                                    DeleteOptions options = {}, int64_t now = kNow) {
    std::optional<store::Object> live = Get(res, ns, name);
    if (!live) return absl::NotFoundError(name);
    absl::StatusOr<DeletePlan> plan = PlanDelete(res, *live, options, now);
    if (plan.ok() && !plan->ops.empty()) {
      auto stored = store_->Commit(plan->ops);
      EXPECT_TRUE(stored.ok()) << stored.status();
    }
    return plan;
  }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
};

// --- PlanDelete ----------------------------------------------------------------------------------

TEST_F(LifecycleTest, UnboundPodDeletesNow) {
  Put(Pods(), MakePod("p").Obj());
  auto plan = Delete(Pods(), "default", "p");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->deleted_now);
  ASSERT_EQ(plan->ops.size(), 1u);
  EXPECT_EQ(plan->ops[0].kind, store::OpKind::kDelete);
  EXPECT_FALSE(Get(Pods(), "default", "p"));
}

TEST_F(LifecycleTest, BoundPodDeletesGracefully) {
  Put(Pods(), MakePod("p").Node("n1").Obj());
  auto plan = Delete(Pods(), "default", "p");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->deleted_now);
  const json::object& meta = plan->result.at("metadata").as_object();
  EXPECT_EQ(meta.at("deletionTimestamp"), "2023-11-14T22:13:50Z");  // now + 30 s
  EXPECT_EQ(meta.at("deletionGracePeriodSeconds"), 30);
  std::optional<store::Object> live = Get(Pods(), "default", "p");
  ASSERT_TRUE(live);
  EXPECT_EQ(Parse(*live).at("metadata").at("deletionGracePeriodSeconds"), 30);

  // Deleting again with a longer or no grace period changes nothing.
  plan = Delete(Pods(), "default", "p", Grace(60));
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->ops, IsEmpty());
  // A shorter one moves the deadline; 0 (the node agent's confirmation) deletes.
  plan = Delete(Pods(), "default", "p", Grace(10));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->result.at("metadata").at("deletionTimestamp"), "2023-11-14T22:13:30Z");
  plan = Delete(Pods(), "default", "p", Grace(0));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->deleted_now);
  EXPECT_FALSE(Get(Pods(), "default", "p"));
}

TEST_F(LifecycleTest, BoundPodWithZeroGraceOrFinishedDeletesNow) {
  Put(Pods(), MakePod("a").Node("n1").Obj());
  Put(Pods(), MakePod("b").Node("n1").Phase("Succeeded").Obj());
  auto plan = Delete(Pods(), "default", "a", Grace(0));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->deleted_now);
  plan = Delete(Pods(), "default", "b");
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->deleted_now);
  EXPECT_THAT(Names(Pods()), IsEmpty());
}

TEST_F(LifecycleTest, FinalizersOnlyMark) {
  Put(Pods(), MakePod("p").Finalizer("example.com/hold").Obj());
  auto plan = Delete(Pods(), "default", "p");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->deleted_now);
  const json::object& meta = plan->result.at("metadata").as_object();
  EXPECT_EQ(meta.at("deletionTimestamp"), "2023-11-14T22:13:20Z");
  EXPECT_EQ(meta.at("deletionGracePeriodSeconds"), 0);
  EXPECT_TRUE(Get(Pods(), "default", "p"));
}

TEST_F(LifecycleTest, NamespaceGoesTerminating) {
  Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"},
      "status":{"phase":"Active"}})"));
  auto plan = Delete(Namespaces(), "", "team");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->deleted_now);
  EXPECT_EQ(plan->result.at("status").at("phase"), "Terminating");
  EXPECT_TRUE(plan->result.at("metadata").as_object().contains("deletionTimestamp"));
  // A second delete changes nothing.
  plan = Delete(Namespaces(), "", "team");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->ops, IsEmpty());
}

TEST_F(LifecycleTest, PreconditionMismatchAborts) {
  store::Object live = Put(Pods(), MakePod("p").Obj());
  auto plan = PlanDelete(Pods(), live, Precondition(live.revision + 5), kNow);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(plan.status().message(),
            fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                        "ResourceVersion in object meta: {}",
                        live.revision + 5, live.revision));
  plan = PlanDelete(Pods(), live, Precondition(live.revision), kNow);
  EXPECT_TRUE(plan.ok());
}

TEST_F(LifecycleTest, BuiltinQueuesAndNamespacesCannotBeDeleted) {
  store::Object queue = Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","metadata":{"name":"default"},"spec":{"weight":1}})"));
  auto plan = PlanDelete(Queues(), queue, {}, kNow);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "admission webhook \"validatequeue.volcano.sh\" denied the request: `default` queue "
            "can not be deleted");
  store::Object root = Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","metadata":{"name":"root"},"spec":{"weight":1}})"));
  EXPECT_EQ(PlanDelete(Queues(), root, {}, kNow).status().code(),
            absl::StatusCode::kFailedPrecondition);

  store::Object ns = Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
      "metadata":{"name":"kube-system"}})"));
  plan = PlanDelete(Namespaces(), ns, {}, kNow);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(plan.status().message(), "this namespace may not be deleted");

  store::Object other = Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","metadata":{"name":"team"},"spec":{"weight":1}})"));
  EXPECT_TRUE(PlanDelete(Queues(), other, {}, kNow).ok());
}

TEST_F(LifecycleTest, DryRunPlansWithoutOps) {
  store::Object live = Put(Pods(), MakePod("p").Node("n1").Obj());
  auto plan = PlanDelete(Pods(), live, DryRun(), kNow);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->ops, IsEmpty());
  EXPECT_TRUE(plan->result.at("metadata").as_object().contains("deletionTimestamp"));
}

TEST_F(LifecycleTest, UnknownPropagationPolicyIsRefused) {
  store::Object live = Put(Pods(), MakePod("p").Obj());
  auto plan = PlanDelete(Pods(), live, Policy("Sideways"), kNow);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Lifecycle duties ----------------------------------------------------------------------------

TEST_F(LifecycleTest, DeletingAJobCollectsItsPodGroupAndPods) {
  json::object job = VolcanoJob("train");
  Put(Jobs(), job);
  Put(PodGroups(), PodGroupOf(job));
  Put(Pods(), MakePod("train-w-0").OwnedBy(job).Obj());
  Put(Pods(), MakePod("train-w-1").OwnedBy(job).Obj());
  Put(Pods(), MakePod("other").Obj());
  json::object other_job = VolcanoJob("keep");
  Put(Jobs(), other_job);
  Put(Pods(), MakePod("keep-w-0").OwnedBy(other_job).Obj());
  // An owner of a kind muster does not serve, or lists but never stores (a ReplicaSet), is never
  // taken to be gone.
  Put(Pods(), MakePod("rs-pod")
                  .OwnedBy(Obj(R"({"apiVersion":"apps/v1","kind":"ReplicaSet",
      "metadata":{"name":"rs","uid":"uid-rs"}})"))
                  .Obj());
  Put(Pods(), MakePod("widget-pod")
                  .OwnedBy(Obj(R"({"apiVersion":"example.com/v1","kind":"Widget",
      "metadata":{"name":"w","uid":"uid-w"}})"))
                  .Obj());

  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow);
  EXPECT_THAT(Names(PodGroups()), ElementsAre("train-pg"));
  EXPECT_EQ(Names(Pods()).size(), 6u);

  ASSERT_TRUE(Delete(Jobs(), "default", "train").ok());
  lifecycle.RunOnce(kNow);
  EXPECT_THAT(Names(PodGroups()), IsEmpty());
  EXPECT_THAT(Names(Pods()), ElementsAre("keep-w-0", "other", "rs-pod", "widget-pod"));
  EXPECT_THAT(Names(Jobs()), ElementsAre("keep"));
}

TEST_F(LifecycleTest, CollectedBoundPodsGoGracefully) {
  json::object job = VolcanoJob("train");
  Put(Jobs(), job);
  Put(Pods(), MakePod("train-w-0").Node("n1").OwnedBy(job).Obj());
  ASSERT_TRUE(Delete(Jobs(), "default", "train").ok());

  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow);
  std::optional<store::Object> pod = Get(Pods(), "default", "train-w-0");
  ASSERT_TRUE(pod);
  EXPECT_EQ(Parse(*pod).at("metadata").at("deletionTimestamp"), "2023-11-14T22:13:50Z");
  lifecycle.RunOnce(kNow + 31);
  EXPECT_FALSE(Get(Pods(), "default", "train-w-0"));
}

TEST_F(LifecycleTest, GracefulPodDeletionExpires) {
  Put(Pods(), MakePod("p").Node("n1").Obj());
  ASSERT_TRUE(Delete(Pods(), "default", "p").ok());
  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow + 10);
  EXPECT_TRUE(Get(Pods(), "default", "p"));
  lifecycle.RunOnce(kNow + 30);
  EXPECT_FALSE(Get(Pods(), "default", "p"));
}

TEST_F(LifecycleTest, NamespaceTerminationEmptiesThenRemovesIt) {
  Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"},
      "status":{"phase":"Active"}})"));
  Put(Pods(), MakePod("idle").Ns("team").Obj());
  Put(Pods(), MakePod("busy").Ns("team").Node("n1").Obj());
  Put(Pods(), MakePod("elsewhere").Obj());
  json::object pg = PodGroupOf(VolcanoJob("j"));
  pg["metadata"].as_object()["namespace"] = "team";
  pg["metadata"].as_object().erase("ownerReferences");
  Put(PodGroups(), pg);
  ASSERT_TRUE(Delete(Namespaces(), "", "team").ok());

  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow);
  EXPECT_THAT(Names(Pods(), "team"), ElementsAre("busy"));  // bound: graceful
  EXPECT_THAT(Names(PodGroups(), "team"), IsEmpty());
  std::optional<store::Object> ns = Get(Namespaces(), "", "team");
  ASSERT_TRUE(ns);
  EXPECT_EQ(Parse(*ns).at("status").at("phase"), "Terminating");

  lifecycle.RunOnce(kNow + 31);  // the grace period of "busy" is over
  lifecycle.RunOnce(kNow + 31);
  EXPECT_THAT(Names(Pods(), "team"), IsEmpty());
  EXPECT_FALSE(Get(Namespaces(), "", "team"));
  EXPECT_THAT(Names(Pods()), ElementsAre("elsewhere"));
}

TEST_F(LifecycleTest, FinalizersHoldUntilRemoved) {
  Put(Nodes(), Obj(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","uid":"uid-n1",
      "finalizers":["example.com/drain"]}})"));
  ASSERT_TRUE(Delete(Nodes(), "", "n1").ok());
  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow + 3600);
  std::optional<store::Object> node = Get(Nodes(), "", "n1");
  ASSERT_TRUE(node);

  // The finalizer's owner is done: it removes its finalizer with an ordinary update.
  json::object released = Parse(*node);
  released["metadata"].as_object().erase("finalizers");
  store::Op op;
  op.kind = store::OpKind::kUpdate;
  op.key = node->key;
  op.object = released;
  ASSERT_TRUE(store_->Commit({std::move(op)}).ok());
  lifecycle.RunOnce(kNow + 3600);
  EXPECT_FALSE(Get(Nodes(), "", "n1"));
}

TEST_F(LifecycleTest, OrphanPropagationKeepsDependents) {
  json::object job = VolcanoJob("train");
  Put(Jobs(), job);
  Put(Pods(), MakePod("train-w-0").OwnedBy(job).Obj());
  ASSERT_TRUE(Delete(Jobs(), "default", "train", Policy("Orphan")).ok());
  ASSERT_TRUE(Get(Jobs(), "default", "train"));

  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow);
  lifecycle.RunOnce(kNow);
  EXPECT_FALSE(Get(Jobs(), "default", "train"));
  std::optional<store::Object> pod = Get(Pods(), "default", "train-w-0");
  ASSERT_TRUE(pod);
  EXPECT_FALSE(Parse(*pod).at("metadata").as_object().contains("ownerReferences"));
}

TEST_F(LifecycleTest, ForegroundPropagationRemovesDependentsFirst) {
  json::object job = VolcanoJob("train");
  Put(Jobs(), job);
  Put(Pods(), MakePod("train-w-0").OwnedBy(job).Obj());
  ASSERT_TRUE(Delete(Jobs(), "default", "train", Policy("Foreground")).ok());

  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow);
  EXPECT_FALSE(Get(Pods(), "default", "train-w-0"));
  EXPECT_TRUE(Get(Jobs(), "default", "train"));  // still waiting for its dependents to go
  lifecycle.RunOnce(kNow);
  EXPECT_FALSE(Get(Jobs(), "default", "train"));
}

// Only references with blockOwnerDeletion hold a foreground deletion; the others' dependents are
// deleted too, without being waited for (Kubernetes' garbage collector).
TEST_F(LifecycleTest, ForegroundWaitsOnlyForDependentsThatBlockIt) {
  json::object job = VolcanoJob("train");
  Put(Jobs(), job);
  Put(Pods(), MakePod("train-w-0").Node("n1").OwnedBy(job, /*blocks=*/false).Obj());
  ASSERT_TRUE(Delete(Jobs(), "default", "train", Policy("Foreground")).ok());

  Lifecycle lifecycle(*store_);
  lifecycle.RunOnce(kNow);
  EXPECT_FALSE(Get(Jobs(), "default", "train"));
  std::optional<store::Object> pod = Get(Pods(), "default", "train-w-0");
  ASSERT_TRUE(pod) << "a bound pod goes gracefully";
  EXPECT_TRUE(Parse(*pod).at("metadata").as_object().contains("deletionTimestamp"));
}

// An object that owns itself, foreground-deleted: it would wait for itself for ever. Kubernetes'
// garbage collector makes such a reference non-blocking; so does muster's.
TEST_F(LifecycleTest, ForegroundDeletionOfASelfOwnedObjectFinishes) {
  json::object pod = MakePod("narcissus").Obj();
  Put(Pods(), MakePod("narcissus").OwnedBy(pod).Obj());
  ASSERT_TRUE(Delete(Pods(), "default", "narcissus", Policy("Foreground")).ok());
  ASSERT_TRUE(Get(Pods(), "default", "narcissus"));

  Lifecycle lifecycle(*store_);
  for (int pass = 0; pass < 4 && Get(Pods(), "default", "narcissus"); ++pass) {
    lifecycle.RunOnce(kNow);
  }
  EXPECT_FALSE(Get(Pods(), "default", "narcissus"));
}

// Two objects owning each other, both foreground-deleted: each waits for the other unless the
// cycle is broken.
TEST_F(LifecycleTest, ForegroundDeletionOfTwoObjectsOwningEachOtherFinishes) {
  json::object a = MakePod("a").Obj(), b = MakePod("b").Obj();
  Put(Pods(), MakePod("a").OwnedBy(b).Obj());
  Put(Pods(), MakePod("b").OwnedBy(a).Obj());
  ASSERT_TRUE(Delete(Pods(), "default", "a", Policy("Foreground")).ok());
  ASSERT_TRUE(Delete(Pods(), "default", "b", Policy("Foreground")).ok());

  Lifecycle lifecycle(*store_);
  for (int pass = 0; pass < 6 && !Names(Pods()).empty(); ++pass) lifecycle.RunOnce(kNow);
  EXPECT_THAT(Names(Pods()), IsEmpty());
}

TEST_F(LifecycleTest, BackgroundThreadCollects) {
  json::object job = VolcanoJob("train");
  Put(Jobs(), job);
  Put(Pods(), MakePod("train-w-0").OwnedBy(job).Obj());
  LifecycleOptions options;
  options.poll_interval = std::chrono::milliseconds(10);
  Lifecycle lifecycle(*store_, options);
  ASSERT_TRUE(lifecycle.Start().ok());
  ASSERT_TRUE(Delete(Jobs(), "default", "train").ok());
  // Liveness bound only; the pass normally runs within one poll interval.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Get(Pods(), "default", "train-w-0") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  lifecycle.Stop();
  lifecycle.Stop();  // idempotent
  EXPECT_FALSE(Get(Pods(), "default", "train-w-0"));
}

}  // namespace
}  // namespace muster::apiserver
