#include "store/store.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        (std::filesystem::path(base != nullptr ? base : "/tmp") / "muster-store-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Builds the JSON of a pod for store ops: MakePod("p").Ns("default").Label("app", "x").Obj().
class PodBuilder {
 public:
  explicit PodBuilder(std::string name) : name_(std::move(name)) {}
  PodBuilder& Ns(std::string ns) {
    ns_ = std::move(ns);
    return *this;
  }
  PodBuilder& Label(std::string key, std::string value) {
    labels_[key] = std::move(value);
    return *this;
  }
  PodBuilder& Padding(size_t bytes) {
    padding_ = bytes;
    return *this;
  }
  boost::json::value Obj() const {
    boost::json::object metadata{{"name", name_}, {"labels", labels_}};
    if (!ns_.empty()) metadata["namespace"] = ns_;
    if (padding_ > 0) metadata["annotations"] = {{"note", std::string(padding_, 'x')}};
    return boost::json::object{{"apiVersion", "v1"},
                               {"kind", "Pod"},
                               {"metadata", std::move(metadata)},
                               {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  }

 private:
  std::string name_;
  std::string ns_ = "default";
  boost::json::object labels_;
  size_t padding_ = 0;
};
PodBuilder MakePod(std::string name) { return PodBuilder(std::move(name)); }

Key PodKey(const std::string& name, const std::string& ns = "default") {
  return Key{.resource = "pods", .ns = ns, .name = name};
}
Key NodeKey(const std::string& name) { return Key{.resource = "nodes", .ns = "", .name = name}; }

Op Create(Key key, boost::json::value object) {
  return Op{.kind = OpKind::kCreate,
            .key = std::move(key),
            .object = std::move(object),
            .expected_revision = std::nullopt,
            .managed_fields = std::nullopt};
}
Op Update(Key key, boost::json::value object, std::optional<int64_t> expected = std::nullopt) {
  return Op{.kind = OpKind::kUpdate,
            .key = std::move(key),
            .object = std::move(object),
            .expected_revision = expected,
            .managed_fields = std::nullopt};
}
Op Delete(Key key, std::optional<int64_t> expected = std::nullopt) {
  return Op{.kind = OpKind::kDelete,
            .key = std::move(key),
            .object = nullptr,
            .expected_revision = expected,
            .managed_fields = std::nullopt};
}
Op CreatePod(const std::string& name, const std::string& ns = "default") {
  return Create(PodKey(name, ns), MakePod(name).Ns(ns).Obj());
}

boost::json::value Parse(const std::shared_ptr<const std::string>& json) {
  return boost::json::parse(*json);
}
std::string ResourceVersion(const std::shared_ptr<const std::string>& json) {
  return std::string(Parse(json).at("metadata").at("resourceVersion").as_string());
}
std::string Label(const std::shared_ptr<const std::string>& json, const std::string& key) {
  return std::string(Parse(json).at("metadata").at("labels").at(key).as_string());
}

std::unique_ptr<Store> MustOpen(const std::string& path, StoreOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

int64_t MustCommitOne(Store& store, Op op) {
  std::vector<Op> ops;
  ops.push_back(std::move(op));
  absl::StatusOr<std::vector<Object>> result = store.Commit(std::move(ops));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->at(0).revision : -1;
}

absl::Status CommitStatus(Store& store, std::vector<Op> ops) {
  return store.Commit(std::move(ops)).status();
}

// The next event, failing the test on error or if none arrives within a generous liveness bound.
std::optional<Event> MustNext(Watch& watch) {
  absl::StatusOr<std::optional<Event>> event = watch.Next(30s);
  EXPECT_TRUE(event.ok()) << event.status();
  if (!event.ok()) return std::nullopt;
  EXPECT_TRUE(event->has_value()) << "no event within 30s";
  return *event;
}

void ExpectNoEvent(Watch& watch) {
  absl::StatusOr<std::optional<Event>> event = watch.Next(0ms);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->has_value()) << "unexpected event at revision " << (*event)->revision;
}

std::vector<std::string> Names(const ListResult& list) {
  std::vector<std::string> names;
  for (const Object& o : list.items) names.push_back(o.key.ns + "/" + o.key.name);
  return names;
}

TEST(StoreTest, CreateGetUpdateDeleteStampRevisions) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Revision(), 0);

  absl::StatusOr<std::vector<Object>> created = store->Commit({CreatePod("web")});
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->size(), 1u);
  EXPECT_EQ(created->at(0).revision, 1);
  EXPECT_EQ(ResourceVersion(created->at(0).json), "1");
  EXPECT_EQ(store->Revision(), 1);

  absl::StatusOr<Object> got = store->Get(PodKey("web"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->revision, 1);
  EXPECT_EQ(*got->json, *created->at(0).json);
  EXPECT_EQ(Parse(got->json).at("spec").at("containers").at(0).at("image"), "busybox");

  // Conditional update at the stored revision succeeds; the caller's resourceVersion is replaced.
  boost::json::value v2 = MakePod("web").Label("v", "2").Obj();
  v2.at("metadata").as_object()["resourceVersion"] = "999";
  EXPECT_EQ(MustCommitOne(*store, Update(PodKey("web"), v2, 1)), 2);
  got = store->Get(PodKey("web"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->revision, 2);
  EXPECT_EQ(ResourceVersion(got->json), "2");
  EXPECT_EQ(Label(got->json, "v"), "2");

  // A stale revision is a conflict naming the key and both revisions.
  absl::Status stale = CommitStatus(*store, {Update(PodKey("web"), MakePod("web").Obj(), 1)});
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted) << stale;
  EXPECT_THAT(stale.message(), HasSubstr("pods default/web"));
  EXPECT_THAT(stale.message(), HasSubstr("expected revision 1"));
  EXPECT_THAT(stale.message(), HasSubstr("stored revision 2"));

  // An unconditional update applies.
  EXPECT_EQ(MustCommitOne(*store, Update(PodKey("web"), MakePod("web").Label("v", "3").Obj())), 3);

  EXPECT_EQ(CommitStatus(*store, {CreatePod("web")}).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CommitStatus(*store, {Update(PodKey("nope"), MakePod("nope").Obj())}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(CommitStatus(*store, {Delete(PodKey("nope"))}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CommitStatus(*store, {Delete(PodKey("web"), 2)}).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store->Revision(), 3) << "failed commits must not consume revisions";

  // A delete returns the final state stamped with the delete's revision.
  absl::StatusOr<std::vector<Object>> deleted = store->Commit({Delete(PodKey("web"), 3)});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->at(0).revision, 4);
  EXPECT_EQ(ResourceVersion(deleted->at(0).json), "4");
  EXPECT_EQ(Label(deleted->at(0).json, "v"), "3");
  EXPECT_EQ(store->Get(PodKey("web")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Revision(), 4);

  // The name is free again.
  EXPECT_EQ(MustCommitOne(*store, CreatePod("web")), 5);
}

TEST(StoreTest, RejectsInvalidObjectsAndKeys) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(CommitStatus(*store, {Create(PodKey("a"), boost::json::array{1, 2})}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CommitStatus(*store, {Create(PodKey("a"), boost::json::object{{"metadata", "x"}})}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CommitStatus(*store, {Create(PodKey(""), MakePod("a").Obj())}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CommitStatus(*store, {Create(Key{.resource = "", .ns = "", .name = "a"}, MakePod("a").Obj())})
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Revision(), 0);
  EXPECT_TRUE(store->List("pods", "").items.empty());

  // An object without metadata gets one.
  absl::StatusOr<std::vector<Object>> bare =
      store->Commit({Create(PodKey("bare"), boost::json::object{{"kind", "Pod"}})});
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(ResourceVersion(bare->at(0).json), "1");

  absl::StatusOr<std::vector<Object>> none = store->Commit({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(store->Revision(), 1);
}

TEST(StoreTest, CommitGivesEachOpItsOwnRevisionInOrder) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(MustCommitOne(*store, CreatePod("old")), 1);
  auto watch = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(watch.ok()) << watch.status();

  // Later ops see earlier ones: the update's precondition is the create's revision.
  absl::StatusOr<std::vector<Object>> result = store->Commit(
      {CreatePod("a"), CreatePod("b"), Update(PodKey("a"), MakePod("a").Label("v", "2").Obj(), 2),
       Delete(PodKey("old"), 1)});
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<int64_t> revisions;
  for (const Object& o : *result) revisions.push_back(o.revision);
  EXPECT_THAT(revisions, ElementsAre(2, 3, 4, 5));
  EXPECT_EQ(result->at(2).key.name, "a");
  EXPECT_EQ(store->Revision(), 5);
  EXPECT_EQ(store->Get(PodKey("a"))->revision, 4);

  std::vector<std::pair<EventType, int64_t>> events;
  for (int i = 0; i < 4; ++i) {
    std::optional<Event> e = MustNext(**watch);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(ResourceVersion(e->object), std::to_string(e->revision));
    events.emplace_back(e->type, e->revision);
  }
  EXPECT_THAT(events,
              ElementsAre(std::pair(EventType::kAdded, 2), std::pair(EventType::kAdded, 3),
                          std::pair(EventType::kModified, 4), std::pair(EventType::kDeleted, 5)));
  ExpectNoEvent(**watch);
}

TEST(StoreTest, FailedCommitAppliesNothingInMemoryOrOnDisk) {
  TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_EQ(MustCommitOne(*store, CreatePod("a")), 1);
    auto watch = store->WatchFrom("pods", "", 0);
    ASSERT_TRUE(watch.ok());

    // The second op conflicts: the first must not be applied.
    absl::Status conflict =
        CommitStatus(*store, {CreatePod("b"), Update(PodKey("a"), MakePod("a").Obj(), 99)});
    EXPECT_EQ(conflict.code(), absl::StatusCode::kAborted) << conflict;
    absl::Status exists =
        CommitStatus(*store, {Delete(PodKey("a")), CreatePod("c"), CreatePod("c")});
    EXPECT_EQ(exists.code(), absl::StatusCode::kAlreadyExists) << exists;
    absl::Status invalid =
        CommitStatus(*store, {CreatePod("d"), Create(PodKey("e"), boost::json::value("x"))});
    EXPECT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument) << invalid;

    EXPECT_EQ(store->Get(PodKey("b")).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(store->Get(PodKey("c")).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(store->Get(PodKey("d")).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(store->Get(PodKey("a"))->revision, 1);
    EXPECT_THAT(Names(store->List("pods", "")), ElementsAre("default/a"));
    EXPECT_EQ(store->Revision(), 1);
    ExpectNoEvent(**watch);
  }
  auto reopened = MustOpen(path);
  ASSERT_NE(reopened, nullptr);
  EXPECT_THAT(Names(reopened->List("pods", "")), ElementsAre("default/a"));
  EXPECT_EQ(reopened->Get(PodKey("a"))->revision, 1);
  EXPECT_EQ(reopened->Revision(), 1);
  EXPECT_EQ(MustCommitOne(*reopened, CreatePod("b")), 2);
}

TEST(StoreTest, AnObjectOverTheSizeLimitFailsItsCommitWhole) {
  TempDir dir;
  StoreOptions options;
  options.max_object_bytes = 4096;
  auto opened = Store::Open(dir.File("db"), options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  ASSERT_EQ(MustCommitOne(store, CreatePod("a")), 1);

  boost::json::value big = MakePod("big").Obj();
  big.as_object()["metadata"].as_object()["annotations"] =
      boost::json::object{{"blob", std::string(5000, 'x')}};
  absl::Status refused = CommitStatus(store, {CreatePod("b"), Create(PodKey("big"), big)});
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("more than the limit of 4096"));
  absl::Status grown = CommitStatus(store, {Update(PodKey("a"), big, 1)});
  EXPECT_EQ(grown.code(), absl::StatusCode::kResourceExhausted) << grown;

  EXPECT_EQ(store.Get(PodKey("b")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Get(PodKey("a"))->revision, 1);
  EXPECT_EQ(store.Revision(), 1);
  // Below the limit, the same object is stored.
  big.as_object()["metadata"].as_object()["annotations"] =
      boost::json::object{{"blob", std::string(3000, 'x')}};
  EXPECT_TRUE(CommitStatus(store, {Create(PodKey("big"), big)}).ok());
}

// boost::json keeps 1e400 as an infinity and serialises it as the bare token Infinity: such an
// object was stored, and from then on could not be read, listed or deleted.
TEST(StoreTest, AnObjectWithANonFiniteNumberFailsItsCommitWhole) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(MustCommitOne(*store, CreatePod("a")), 1);
  for (double number :
       {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()}) {
    boost::json::value pod = MakePod("bad").Obj();
    pod.as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["x"] =
        boost::json::array{1, number};
    absl::Status refused = CommitStatus(*store, {CreatePod("b"), Create(PodKey("bad"), pod)});
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
    EXPECT_EQ(refused.message(),
              "pods default/bad: spec.containers[0].x[1]: the number is not finite, and JSON "
              "cannot represent it");
    EXPECT_EQ(CommitStatus(*store, {Update(PodKey("a"), pod)}).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(store->Get(PodKey("b")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Revision(), 1);
}

// Rewrites a stored object's text behind the store's back (the store must be closed).
void DamageOnDisk(const std::string& path, const Key& key, const std::string& text) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "UPDATE objects SET json = ?1 WHERE resource = ?2 AND "
                               "namespace = ?3 AND name = ?4",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  sqlite3_bind_text(stmt, 1, text.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, key.resource.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 3, key.ns.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 4, key.name.c_str(), -1, SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
  sqlite3_finalize(stmt);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);
}

TEST(StoreTest, StoredObjectProblemSaysWhyATextCannotBeServed) {
  EXPECT_EQ(StoredObjectProblem(R"({"metadata":{"name":"a"},"x":[1,2.5]})"), std::nullopt);
  EXPECT_EQ(StoredObjectProblem(R"({"kind":"Pod"})"), std::nullopt);
  EXPECT_EQ(StoredObjectProblem(R"({"metadata":{"name":"a"},"x":Infinity})"),
            "not valid JSON: syntax error at byte 29");
  EXPECT_EQ(StoredObjectProblem(R"({"metadata":{)"), "not valid JSON: incomplete JSON at byte 13");
  EXPECT_EQ(StoredObjectProblem(R"({"spec":{"x":[0,-1e999]}})"),
            "spec.x[1]: the number is not finite");
  EXPECT_EQ(StoredObjectProblem("[1]"), "not a JSON object");
  EXPECT_EQ(StoredObjectProblem(R"({"metadata":"a"})"), "metadata is not a JSON object");
}

TEST(StoreTest, DamagedObjectsAreFoundAtOpenFlaggedAndCanBeDeleted) {
  TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    MustCommitOne(*store, CreatePod("a"));
    MustCommitOne(*store, CreatePod("bad"));
    MustCommitOne(*store, CreatePod("worse", "other"));
  }
  DamageOnDisk(path, PodKey("bad"), R"({"metadata":{"name":"bad"},"x":Infinity})");
  DamageOnDisk(path, PodKey("worse", "other"), "[]");

  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  std::vector<DamagedObject> damaged = store->Damaged();
  ASSERT_EQ(damaged.size(), 2u);
  EXPECT_EQ(damaged[0].key, PodKey("bad"));
  EXPECT_EQ(damaged[0].revision, 2);
  EXPECT_EQ(damaged[0].problem, "not valid JSON: syntax error at byte 31");
  EXPECT_EQ(damaged[1].key, PodKey("worse", "other"));
  EXPECT_EQ(damaged[1].problem, "not a JSON object");

  absl::StatusOr<Object> bad = store->Get(PodKey("bad"));
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_TRUE(bad->damaged);
  EXPECT_FALSE(store->Get(PodKey("a"))->damaged);
  ListResult list = store->List("pods", "");
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_FALSE(list.items[0].damaged);
  EXPECT_TRUE(list.items[1].damaged);

  // The final state of a damaged object is what the delete gives, named by its key.
  auto watch = store->WatchFrom("pods", "", store->Revision());
  ASSERT_TRUE(watch.ok()) << watch.status();
  absl::StatusOr<std::vector<Object>> deleted =
      store->Commit({Op{.kind = OpKind::kDelete,
                        .key = PodKey("bad"),
                        .object = boost::json::object{{"apiVersion", "v1"}, {"kind", "Pod"}},
                        .expected_revision = 2,
                        .managed_fields = std::nullopt},
                     Delete(PodKey("worse", "other"))});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(Parse(deleted->at(0).json),
            boost::json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad",)"
                               R"("namespace":"default","resourceVersion":"4"}})"));
  EXPECT_EQ(Parse(deleted->at(1).json),
            boost::json::parse(R"({"metadata":{"name":"worse","namespace":"other",)"
                               R"("resourceVersion":"5"}})"));
  std::optional<Event> event = MustNext(**watch);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->type, EventType::kDeleted);
  EXPECT_EQ(*event->object, *deleted->at(0).json);
  EXPECT_TRUE(store->Damaged().empty());
  EXPECT_THAT(Names(store->List("pods", "")), ElementsAre("default/a"));

  store.reset();
  store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Damaged().empty());
  EXPECT_THAT(Names(store->List("pods", "")), ElementsAre("default/a"));
}

TEST(StoreTest, ObjectsAndRevisionSurviveReopen) {
  TempDir dir;
  const std::string path = dir.File("db");
  std::vector<Object> before;
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 20; ++i) MustCommitOne(*store, CreatePod(fmt::format("p{:02}", i)));
    MustCommitOne(*store, Update(PodKey("p03"), MakePod("p03").Label("v", "2").Obj()));
    MustCommitOne(*store, Delete(PodKey("p07")));
    MustCommitOne(*store, Create(NodeKey("n1"), boost::json::object{{"kind", "Node"}}));
    before = store->List("pods", "").items;
    ASSERT_EQ(before.size(), 19u);
    EXPECT_EQ(store->Revision(), 23);
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Revision(), 23);
  ListResult after = store->List("pods", "");
  EXPECT_EQ(after.revision, 23);
  ASSERT_EQ(after.items.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after.items[i].key, before[i].key);
    EXPECT_EQ(after.items[i].revision, before[i].revision);
    EXPECT_EQ(*after.items[i].json, *before[i].json);
  }
  EXPECT_EQ(Label(store->Get(PodKey("p03"))->json, "v"), "2");
  EXPECT_EQ(store->Get(PodKey("p07")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Get(NodeKey("n1"))->revision, 23);
}

TEST(StoreTest, RevisionNeverDecreasesAfterDeletingTheNewestObject) {
  TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    MustCommitOne(*store, CreatePod("a"));
    MustCommitOne(*store, CreatePod("b"));
    MustCommitOne(*store, CreatePod("c"));
    ASSERT_EQ(MustCommitOne(*store, Delete(PodKey("c"))), 4);
    ASSERT_EQ(MustCommitOne(*store, Delete(PodKey("b"))), 5);
  }
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Revision(), 5);
    EXPECT_EQ(MustCommitOne(*store, CreatePod("d")), 6);
    MustCommitOne(*store, Delete(PodKey("a")));
    MustCommitOne(*store, Delete(PodKey("d")));
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->List("pods", "").items.empty());
  EXPECT_EQ(store->Revision(), 8);
  EXPECT_EQ(MustCommitOne(*store, CreatePod("e")), 9);
}

TEST(StoreTest, DatabaseIsWalWithRevisionInMeta) {
  TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    MustCommitOne(*store, CreatePod("a"));
    MustCommitOne(*store, Delete(PodKey("a")));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto query = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string text;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return text;
  };
  EXPECT_EQ(query("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'revision'"), "2");
  EXPECT_EQ(query("SELECT count(*) FROM objects"), "0");
  sqlite3_close(db);
}

TEST(StoreTest, SecondOpenOfTheSameFileFails) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::unique_ptr<Store>> second = Store::Open(dir.File("db"));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_EQ(Store::Open(dir.File("missing-dir/db")).status().code(),
            absl::StatusCode::kUnavailable);
}

// Runs `sql` on the database file at `path` with SQLite directly (no store open on it).
void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// The first column of the first row of `sql`, as text ("" when there is none).
std::string SqlText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string text;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return text;
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

// Open fails with FailedPrecondition naming the file, saying why and what to do.
void ExpectRefused(const std::string& path, const std::string& why) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr(why));
  EXPECT_THAT(store.status().message(), HasSubstr("not a muster store"));
  EXPECT_THAT(store.status().message(), HasSubstr("--reset"));
}

TEST(StoreFileTest, TheStoreAndItsWalAreOwnerOnlyWhateverTheUmask) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  const mode_t umask_before = ::umask(022);
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    MustCommitOne(*store, CreatePod("a"));
    EXPECT_EQ(Mode(path), 0600u);
    ASSERT_TRUE(std::filesystem::exists(path + "-wal"));
    EXPECT_EQ(Mode(path + "-wal"), 0600u);
    if (std::filesystem::exists(path + "-shm")) {
      EXPECT_EQ(Mode(path + "-shm"), 0600u);
    }
  }
  // A store left readable by others (made before this rule) is narrowed when opened.
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  EXPECT_NE(MustOpen(path), nullptr);
  EXPECT_EQ(Mode(path), 0600u);
  ::umask(umask_before);
}

TEST(StoreFileTest, AnEmptyFileIsRefusedNotTakenForANewStore) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  WriteAll(path, "");
  ExpectRefused(path, "the file is empty (zero length)");
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
}

TEST(StoreFileTest, AFileThatIsNotSqliteIsRefusedAndLeftAlone) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  const std::string text = "apiVersion: v1\nkind: Config\n";
  WriteAll(path, text);
  ExpectRefused(path, "not an SQLite database");
  EXPECT_EQ(ReadAll(path), text);
}

TEST(StoreFileTest, AnSqliteDatabaseThatIsNotMustersIsRefused) {
  TempDir dir;
  const std::string other = dir.File("other.db");
  Sql(other, "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT)");
  ExpectRefused(other, "an SQLite database without muster's tables");
  EXPECT_EQ(SqlText(other, "SELECT count(*) FROM sqlite_master"), "1");
  EXPECT_EQ(SqlText(other, "PRAGMA journal_mode"), "delete");  // not switched to WAL

  const std::string app = dir.File("app.db");
  Sql(app, "PRAGMA application_id=42; CREATE TABLE objects(x)");
  ExpectRefused(app, "an SQLite database of another application (application_id 42)");

  // Marked as muster's, but its tables are gone.
  const std::string damaged = dir.File("damaged.db");
  Sql(damaged, fmt::format("PRAGMA application_id={}; PRAGMA user_version=1; CREATE TABLE x(y)",
                           0x4D555354));
  ExpectRefused(damaged, "muster's tables are missing");
}

TEST(StoreFileTest, ANewStoreIsMarkedAndAnUnmarkedOldOneIsKeptAndMarked) {
  TempDir dir;
  const std::string fresh = dir.File("fresh.db");
  EXPECT_NE(MustOpen(fresh), nullptr);
  EXPECT_EQ(SqlText(fresh, "PRAGMA application_id"), std::to_string(0x4D555354));
  EXPECT_EQ(SqlText(fresh, "PRAGMA user_version"), "1");

  // What muster wrote before the marker: the two tables, nothing in the header.
  const std::string old = dir.File("old.db");
  Sql(old,
      "CREATE TABLE objects(resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, "
      "revision INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY(resource, namespace, name));"
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
      "INSERT INTO objects VALUES('pods', 'default', 'a', 7, "
      "'{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"}}');"
      "INSERT INTO meta VALUES('revision', 9);");
  {
    auto store = MustOpen(old);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Revision(), 9);
    EXPECT_EQ(store->Get(PodKey("a"))->revision, 7);
  }
  EXPECT_EQ(SqlText(old, "PRAGMA application_id"), std::to_string(0x4D555354));
}

TEST(StoreFileTest, ARevisionCounterBelowTheNewestObjectIsRaisedOnDisk) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    for (const char* name : {"a", "b", "c"}) MustCommitOne(*store, CreatePod(name));
  }
  Sql(path, "UPDATE meta SET value = 1 WHERE key = 'revision'");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Revision(), 3);
  }
  EXPECT_EQ(SqlText(path, "SELECT value FROM meta WHERE key = 'revision'"), "3");

  Sql(path, "DELETE FROM meta");
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Revision(), 3);
  EXPECT_EQ(MustCommitOne(*store, CreatePod("d")), 4);  // never a revision already handed out
}

// Writers on several threads get distinct, dense revisions; a List taken at any moment holds
// exactly the objects written up to its revision (only creates happen here).
TEST(StoreTest, ConcurrentCommitsGetDenseRevisionsAndListsAreConsistent) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  auto watch = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(watch.ok());
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 50;
  std::vector<std::vector<int64_t>> revisions(kWriters);
  std::atomic<bool> writing = true;
  std::atomic<int> inconsistent_lists = 0;
  std::thread reader([&] {
    int64_t last = 0;
    while (writing.load()) {
      ListResult list = store->List("pods", "");
      if (list.revision < last || static_cast<int64_t>(list.items.size()) != list.revision) {
        ++inconsistent_lists;
      }
      last = list.revision;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        revisions[w].push_back(MustCommitOne(*store, CreatePod(fmt::format("w{}-{}", w, i))));
      }
    });
  }
  for (std::thread& t : writers) t.join();
  writing = false;
  reader.join();
  EXPECT_EQ(inconsistent_lists.load(), 0);

  std::vector<int64_t> all;
  for (const auto& r : revisions) {
    EXPECT_TRUE(std::is_sorted(r.begin(), r.end()));
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> dense(kWriters * kPerWriter);
  std::iota(dense.begin(), dense.end(), 1);
  EXPECT_EQ(all, dense);
  for (int64_t want = 1; want <= kWriters * kPerWriter; ++want) {
    std::optional<Event> e = MustNext(**watch);
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ(e->revision, want);
  }
}

// Concurrent commits are written in batches (group commit); each call is still planned against
// the state the calls before it leave, so optimistic read-modify-write loops lose no update: of
// two increments planned from the same revision, the second fails Aborted and is retried.
TEST(StoreTest, ConcurrentCompareAndSwapIncrementsLoseNoUpdate) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  MustCommitOne(*store, Create(PodKey("counter"), MakePod("counter").Label("n", "0").Obj()));
  auto watch = store->WatchFrom("pods", "", 1);
  ASSERT_TRUE(watch.ok());
  constexpr int kWriters = 8;
  constexpr int kPerWriter = 100;
  std::atomic<int> aborted = 0;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      for (int done = 0; done < kPerWriter;) {
        absl::StatusOr<Object> got = store->Get(PodKey("counter"));
        ASSERT_TRUE(got.ok()) << got.status();
        int n = std::stoi(Label(got->json, "n"));
        std::vector<Op> ops;
        ops.push_back(Update(PodKey("counter"),
                             MakePod("counter").Label("n", std::to_string(n + 1)).Obj(),
                             got->revision));
        absl::Status s = CommitStatus(*store, std::move(ops));
        if (s.ok()) {
          ++done;
        } else {
          ASSERT_EQ(s.code(), absl::StatusCode::kAborted) << s;
          ++aborted;
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();
  constexpr int kTotal = kWriters * kPerWriter;
  absl::StatusOr<Object> last = store->Get(PodKey("counter"));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(Label(last->json, "n"), std::to_string(kTotal));
  EXPECT_EQ(store->Revision(), 1 + kTotal);  // failed calls took no revision
  for (int want = 1; want <= kTotal; ++want) {
    std::optional<Event> e = MustNext(**watch);
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ(e->revision, 1 + want);
    ASSERT_EQ(Label(e->object, "n"), std::to_string(want));
  }
  // Reopened, the file holds the same final state.
  store.reset();
  store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Revision(), 1 + kTotal);
  EXPECT_EQ(Label(store->Get(PodKey("counter"))->json, "n"), std::to_string(kTotal));
}

// Calls that queue up behind a long write are written together as one batch; of several updates
// expecting the same revision exactly one succeeds, the others fail Aborted, and a create in the
// same batch is unaffected by their failures.
TEST(StoreTest, CallsQueuedBehindALongWriteConflictAsIfWrittenOneByOne) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  const int64_t created = MustCommitOne(*store, CreatePod("counter"));
  std::vector<Op> bulk;
  for (int i = 0; i < 3000; ++i) {
    bulk.push_back(Create(PodKey(fmt::format("bulk-{}", i)),
                          MakePod(fmt::format("bulk-{}", i)).Padding(2000).Obj()));
  }
  std::thread long_write(
      [&] { EXPECT_TRUE(CommitStatus(*store, std::move(bulk)).ok()); });
  std::this_thread::sleep_for(5ms);  // the bulk commit is being written (it takes ~100 ms)
  constexpr int kUpdaters = 8;
  std::vector<absl::Status> results(kUpdaters);
  std::vector<std::thread> updaters;
  for (int u = 0; u < kUpdaters; ++u) {
    updaters.emplace_back([&, u] {
      std::vector<Op> ops;
      ops.push_back(Update(PodKey("counter"),
                           MakePod("counter").Label("by", std::to_string(u)).Obj(), created));
      results[u] = CommitStatus(*store, std::move(ops));
    });
  }
  absl::Status other;
  std::thread creator([&] { other = CommitStatus(*store, {CreatePod("other")}); });
  long_write.join();
  for (std::thread& t : updaters) t.join();
  creator.join();
  int won = -1, aborted = 0;
  for (int u = 0; u < kUpdaters; ++u) {
    if (results[u].ok()) {
      EXPECT_EQ(won, -1) << "updaters " << won << " and " << u << " both won";
      won = u;
    } else {
      EXPECT_EQ(results[u].code(), absl::StatusCode::kAborted) << results[u];
      ++aborted;
    }
  }
  ASSERT_NE(won, -1);
  EXPECT_EQ(aborted, kUpdaters - 1);
  EXPECT_TRUE(other.ok()) << other;
  EXPECT_EQ(Label(store->Get(PodKey("counter"))->json, "by"), std::to_string(won));
  EXPECT_EQ(store->Revision(), created + 3000 + 1 + 1);
}

TEST(StoreTest, ListIsSortedByNamespaceThenNameAndFiltersByNamespace) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  std::vector<std::pair<std::string, std::string>> keys = {
      {"ns", "b"}, {"ns-a", "a"}, {"ns", "a-1"}, {"default", "z"}, {"ns", "a"}, {"n", "zz"}};
  std::shuffle(keys.begin(), keys.end(), std::mt19937(42));
  for (const auto& [ns, name] : keys) MustCommitOne(*store, CreatePod(name, ns));
  MustCommitOne(*store, Create(NodeKey("n2"), boost::json::object{}));
  MustCommitOne(*store, Create(NodeKey("n1"), boost::json::object{}));

  ListResult all = store->List("pods", "");
  EXPECT_THAT(Names(all), ElementsAre("default/z", "n/zz", "ns/a", "ns/a-1", "ns/b", "ns-a/a"));
  EXPECT_EQ(all.revision, 8);
  EXPECT_THAT(Names(store->List("pods", "ns")), ElementsAre("ns/a", "ns/a-1", "ns/b"));
  EXPECT_THAT(Names(store->List("pods", "n")), ElementsAre("n/zz"));
  EXPECT_TRUE(store->List("pods", "other").items.empty());
  EXPECT_THAT(Names(store->List("nodes", "")), ElementsAre("/n1", "/n2"));
  EXPECT_TRUE(store->List("queues", "").items.empty());
  EXPECT_EQ(store->List("queues", "").revision, 8);
}

TEST(StoreWatchTest, FromZeroSeesLaterChangesOfItsResourceAndNamespace) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  MustCommitOne(*store, CreatePod("p1"));
  auto all = store->WatchFrom("pods", "", 0);
  auto in_default = store->WatchFrom("pods", "default", 0);
  ASSERT_TRUE(all.ok() && in_default.ok());
  ExpectNoEvent(**all);

  MustCommitOne(*store, CreatePod("p2"));
  MustCommitOne(*store, CreatePod("q", "other"));
  MustCommitOne(*store, Create(NodeKey("n"), boost::json::object{}));
  MustCommitOne(*store, Update(PodKey("p1"), MakePod("p1").Label("v", "2").Obj()));
  MustCommitOne(*store, Delete(PodKey("p2")));

  std::optional<Event> added = MustNext(**in_default);
  ASSERT_TRUE(added.has_value());
  EXPECT_EQ(added->type, EventType::kAdded);
  EXPECT_EQ(added->key, PodKey("p2"));
  EXPECT_EQ(added->revision, 2);
  EXPECT_EQ(added->previous, nullptr);

  std::optional<Event> modified = MustNext(**in_default);
  ASSERT_TRUE(modified.has_value());
  EXPECT_EQ(modified->type, EventType::kModified);
  EXPECT_EQ(modified->revision, 5);
  EXPECT_EQ(Label(modified->object, "v"), "2");
  ASSERT_NE(modified->previous, nullptr);
  EXPECT_EQ(ResourceVersion(modified->previous), "1");

  std::optional<Event> deleted = MustNext(**in_default);
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->type, EventType::kDeleted);
  EXPECT_EQ(deleted->key, PodKey("p2"));
  EXPECT_EQ(deleted->revision, 6);
  EXPECT_EQ(ResourceVersion(deleted->object), "6");
  ASSERT_NE(deleted->previous, nullptr);
  EXPECT_EQ(ResourceVersion(deleted->previous), "2");
  ExpectNoEvent(**in_default);

  std::vector<int64_t> seen;
  for (int i = 0; i < 4; ++i) {
    std::optional<Event> e = MustNext(**all);
    ASSERT_TRUE(e.has_value());
    seen.push_back(e->revision);
  }
  EXPECT_THAT(seen, ElementsAre(2, 3, 5, 6));
  ExpectNoEvent(**all);
}

// What an event loop serving many watches relies on: a ready callback per watch, called after an
// append of its resource and namespace (once per commit), once more when the watch closes, and
// never once cleared.
TEST(StoreWatchTest, AReadyCallbackSaysWhenNextHasAnEventForThatWatch) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  auto in_default = store->WatchFrom("pods", "default", 0);
  auto nodes = store->WatchFrom("nodes", "", 0);
  ASSERT_TRUE(in_default.ok() && nodes.ok());
  std::atomic<int> pod_calls{0};
  std::atomic<int> node_calls{0};
  (*in_default)->SetReadyCallback([&] { pod_calls.fetch_add(1); });
  (*nodes)->SetReadyCallback([&] { node_calls.fetch_add(1); });

  MustCommitOne(*store, CreatePod("p1"));
  EXPECT_EQ(pod_calls, 1);
  EXPECT_EQ(node_calls, 0);
  std::optional<Event> e = MustNext(**in_default);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->key, PodKey("p1"));
  absl::StatusOr<std::optional<Event>> none = (*in_default)->Next(0ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  MustCommitOne(*store, CreatePod("q", "other"));  // another namespace: no call
  EXPECT_EQ(pod_calls, 1);
  // Two pods in one commit: one call, two events.
  ASSERT_TRUE(store->Commit({CreatePod("p2"), CreatePod("p3")}).ok());
  EXPECT_EQ(pod_calls, 2);
  EXPECT_EQ(MustNext(**in_default)->key, PodKey("p2"));
  EXPECT_EQ(MustNext(**in_default)->key, PodKey("p3"));
  MustCommitOne(*store, Create(NodeKey("n"), boost::json::object{}));
  EXPECT_EQ(node_calls, 1);

  (*nodes)->SetReadyCallback(nullptr);
  MustCommitOne(*store, Create(NodeKey("n2"), boost::json::object{}));
  EXPECT_EQ(node_calls, 1);

  (*in_default)->Close();
  EXPECT_EQ(pod_calls, 3);  // the close
  MustCommitOne(*store, CreatePod("p4"));
  EXPECT_EQ(pod_calls, 3);
}

TEST(StoreWatchTest, RecentEventsCarryTheirStatesParsedAndOlderOnesOnlyText) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  auto watch = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(watch.ok());
  MustCommitOne(*store, CreatePod("p"));
  // Enough later writes that the first ones fall out of the parsed window (but not the history).
  for (int i = 0; i < 3000; ++i) {
    MustCommitOne(*store, Update(PodKey("p"), MakePod("p").Label("v", std::to_string(i)).Obj()));
  }
  std::optional<Event> first = MustNext(**watch);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->revision, 1);
  EXPECT_EQ(first->parsed, nullptr);
  EXPECT_EQ(Parse(first->object).at("metadata").at("resourceVersion").as_string(), "1");

  std::optional<Event> e;
  for (int revision = 2; revision <= 3001; ++revision) {
    e = MustNext(**watch);
    ASSERT_TRUE(e.has_value());
  }
  // The newest: parsed, the same state as its text, resourceVersion stamped, and the state
  // before it too.
  ASSERT_NE(e->parsed, nullptr);
  EXPECT_EQ(*e->parsed, Parse(e->object));
  EXPECT_EQ(e->parsed->at("metadata").at("resourceVersion").as_string(), "3001");
  ASSERT_NE(e->previous_parsed, nullptr);
  EXPECT_EQ(*e->previous_parsed, Parse(e->previous));

  // Get hands out the parsed state while a reader holds it, and never a stale one.
  auto got = store->Get(PodKey("p"));
  ASSERT_TRUE(got.ok());
  ASSERT_NE(got->parsed, nullptr);
  EXPECT_EQ(got->parsed, e->parsed);
  MustCommitOne(*store, Update(PodKey("p"), MakePod("p").Label("v", "last").Obj()));
  auto after = store->Get(PodKey("p"));
  ASSERT_TRUE(after.ok());
  ASSERT_NE(after->parsed, nullptr);
  EXPECT_EQ(*after->parsed, Parse(after->json));
  EXPECT_EQ(Label(after->json, "v"), "last");
}

TEST(StoreWatchTest, ParsedStatesLeaveOutFieldOwnershipWhichTheTextKeeps) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  auto watch = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(watch.ok());
  boost::json::value pod = MakePod("p").Obj();
  pod.at("metadata").as_object()["managedFields"] =
      boost::json::parse(R"([{"manager":"kubectl","operation":"Update"}])");
  MustCommitOne(*store, Create(PodKey("p"), pod));
  auto got = store->Get(PodKey("p"));
  ASSERT_TRUE(got.ok());
  ASSERT_NE(got->parsed, nullptr);
  EXPECT_FALSE(got->parsed->at("metadata").as_object().contains("managedFields"));
  EXPECT_TRUE(Parse(got->json).at("metadata").as_object().contains("managedFields"));
  std::optional<Event> added = MustNext(**watch);
  ASSERT_TRUE(added.has_value() && added->parsed != nullptr);
  EXPECT_FALSE(added->parsed->at("metadata").as_object().contains("managedFields"));

  // A delete's final state is the stored text's, ownership and all, though the parsed state is
  // still held (by `got`).
  MustCommitOne(*store, Delete(PodKey("p")));
  std::optional<Event> deleted = MustNext(**watch);
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->type, EventType::kDeleted);
  EXPECT_EQ(Parse(deleted->object).at("metadata").at("managedFields"),
            pod.at("metadata").at("managedFields"));
}

// A write that leaves field ownership as it was hands the store its stored text
// (Op::managed_fields): the new state's text holds it as the last member of metadata, byte for
// byte the text of the object holding it there, and the store finds it again after a reopen.
TEST(StoreTest, OwnershipHandedOnAsTextIsWrittenLastInMetadataAndFoundAgainAfterReopen) {
  TempDir dir;
  const boost::json::value managed = boost::json::parse(
      R"([{"manager":"m","operation":"Update","apiVersion":"v1","time":"T1",)"
      R"("fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}}}}])");
  const std::string managed_text = boost::json::serialize(managed);
  // Created with the ownership in the middle of metadata, as a create records it.
  boost::json::value pod = boost::json::parse(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default",)"
      R"("managedFields":)" + managed_text + R"(,"labels":{"app":"x"}},"spec":{"a":1.5}})");
  std::string created_text;
  {
    auto store = MustOpen(dir.File("db"));
    ASSERT_NE(store, nullptr);
    MustCommitOne(*store, Create(PodKey("p"), pod));
    auto got = store->Get(PodKey("p"));
    ASSERT_TRUE(got.ok());
    boost::json::value expected = pod;
    expected.at("metadata").as_object()["resourceVersion"] = "1";
    EXPECT_EQ(*got->json, boost::json::serialize(expected));
    EXPECT_EQ(got->ManagedFieldsText(), managed_text);

    // The parsed state and the text again: the text spliced after the other members.
    Op update = Update(PodKey("p"), *got->parsed);
    update.object.at("metadata").as_object()["labels"].as_object()["app"] = "y";
    update.managed_fields = std::string(got->ManagedFieldsText());
    MustCommitOne(*store, std::move(update));
    got = store->Get(PodKey("p"));
    ASSERT_TRUE(got.ok());
    boost::json::value spliced = *got->parsed;
    EXPECT_FALSE(spliced.at("metadata").as_object().contains("managedFields"));
    spliced.at("metadata").as_object()["managedFields"] = managed;
    EXPECT_EQ(*got->json, boost::json::serialize(spliced));
    EXPECT_EQ(got->ManagedFieldsText(), managed_text);
    created_text = *got->json;

    // The text wins over ownership the object holds; an empty text is none.
    Op none = Update(PodKey("p"), *got->parsed);
    none.object.at("metadata").as_object()["managedFields"] = managed;
    none.managed_fields = "";
    MustCommitOne(*store, std::move(none));
    got = store->Get(PodKey("p"));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->ManagedFieldsText(), "");
    EXPECT_FALSE(Parse(got->json).at("metadata").as_object().contains("managedFields"));

    Op back = Update(PodKey("p"), *got->parsed);
    back.managed_fields = managed_text;
    MustCommitOne(*store, std::move(back));
    got = store->Get(PodKey("p"));
    ASSERT_TRUE(got.ok());
    created_text = *got->json;
  }
  auto reopened = MustOpen(dir.File("db"));
  ASSERT_NE(reopened, nullptr);
  auto got = reopened->Get(PodKey("p"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got->json, created_text);
  EXPECT_EQ(got->ManagedFieldsText(), managed_text);
}

TEST(StoreWatchTest, FromRevisionIsExclusive) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 5; ++i) MustCommitOne(*store, CreatePod(fmt::format("p{}", i)));
  auto watch = store->WatchFrom("pods", "", 2);
  ASSERT_TRUE(watch.ok()) << watch.status();
  for (int64_t want = 3; want <= 5; ++want) {
    std::optional<Event> e = MustNext(**watch);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->revision, want);
    EXPECT_EQ(e->key.name, fmt::format("p{}", want));
  }
  ExpectNoEvent(**watch);

  // From the current revision: nothing until the next write. From the future: waits for it.
  auto current = store->WatchFrom("pods", "", 5);
  auto future = store->WatchFrom("pods", "", 6);
  ASSERT_TRUE(current.ok() && future.ok());
  ExpectNoEvent(**current);
  MustCommitOne(*store, CreatePod("p6"));
  MustCommitOne(*store, CreatePod("p7"));
  EXPECT_EQ(MustNext(**current)->revision, 6);
  EXPECT_EQ(MustNext(**future)->revision, 7);

  EXPECT_EQ(store->WatchFrom("pods", "", -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->WatchFrom("", "", 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StoreWatchTest, FromBeforeRetainedHistoryIsOutOfRange) {
  TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = MustOpen(path, {.history = 4});
    ASSERT_NE(store, nullptr);
    for (int i = 1; i <= 10; ++i) MustCommitOne(*store, CreatePod(fmt::format("p{}", i)));
    // Events 7..10 are retained, so watches may start after 6 or later.
    absl::StatusOr<std::unique_ptr<Watch>> too_old = store->WatchFrom("pods", "", 5);
    EXPECT_EQ(too_old.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(too_old.status().message(), "too old resource version: 5 (6)");
    EXPECT_EQ(store->WatchFrom("pods", "default", 1).status().code(),
              absl::StatusCode::kOutOfRange);

    auto oldest = store->WatchFrom("pods", "", 6);
    ASSERT_TRUE(oldest.ok()) << oldest.status();
    for (int64_t want = 7; want <= 10; ++want) EXPECT_EQ(MustNext(**oldest)->revision, want);
  }
  // After a restart no history is retained: only the current revision (or later) is served.
  auto store = MustOpen(path, {.history = 4});
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->WatchFrom("pods", "", 9).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(store->WatchFrom("nodes", "", 9).status().code(), absl::StatusCode::kOutOfRange);
  auto current = store->WatchFrom("pods", "", 10);
  ASSERT_TRUE(current.ok()) << current.status();
  MustCommitOne(*store, CreatePod("p11"));
  EXPECT_EQ(MustNext(**current)->revision, 11);
}

TEST(StoreWatchTest, SlowWatcherOvertakenByTheRingIsOutOfRange) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"), {.history = 4});
  ASSERT_NE(store, nullptr);
  auto slow = store->WatchFrom("pods", "", 0);
  auto keeping_up = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(slow.ok() && keeping_up.ok());
  MustCommitOne(*store, CreatePod("p1"));
  EXPECT_EQ(MustNext(**slow)->revision, 1);
  EXPECT_EQ(MustNext(**keeping_up)->revision, 1);
  for (int i = 2; i <= 10; ++i) {
    MustCommitOne(*store, CreatePod(fmt::format("p{}", i)));
    EXPECT_EQ(MustNext(**keeping_up)->revision, i);
  }
  absl::StatusOr<std::optional<Event>> next = (*slow)->Next(0ms);
  EXPECT_EQ(next.status().code(), absl::StatusCode::kOutOfRange) << next.status();
  EXPECT_EQ(next.status().message(), "too old resource version: 1 (6)");
  // It stays expired: the client must relist and watch again.
  EXPECT_EQ((*slow)->Next(0ms).status().code(), absl::StatusCode::kOutOfRange);
  ExpectNoEvent(**keeping_up);
}

TEST(StoreWatchTest, WritesToOtherResourcesDoNotExpireAWatcher) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"), {.history = 4});
  ASSERT_NE(store, nullptr);
  auto pods = store->WatchFrom("pods", "", 0);
  auto nodes = store->WatchFrom("nodes", "", 0);
  ASSERT_TRUE(pods.ok() && nodes.ok());
  for (int i = 0; i < 10; ++i) {
    MustCommitOne(*store, Create(NodeKey(fmt::format("n{}", i)), boost::json::object{}));
  }
  MustCommitOne(*store, CreatePod("p"));
  EXPECT_EQ(MustNext(**pods)->revision, 11);
  EXPECT_EQ((*nodes)->Next(0ms).status().code(), absl::StatusCode::kOutOfRange);
  // A new watch from before the nodes writes is fine for pods, too old for nodes.
  EXPECT_TRUE(store->WatchFrom("pods", "", 1).ok());
  EXPECT_EQ(store->WatchFrom("nodes", "", 1).status().code(), absl::StatusCode::kOutOfRange);
}

// Runs `next` on another thread and reports whether it returned within a liveness bound. The
// thread is detached if it did not, so a broken wake-up fails the test instead of hanging it.
bool ReturnsNulloptWithin(std::shared_ptr<Watch> watch, std::chrono::seconds bound) {
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> result = done->get_future();
  std::thread([watch, done] {
    absl::StatusOr<std::optional<Event>> e = watch->Next(std::chrono::hours(1));
    done->set_value(e.ok() && !e->has_value());
  }).detach();
  return result.wait_for(bound) == std::future_status::ready && result.get();
}

TEST(StoreWatchTest, CloseWakesABlockedNext) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::unique_ptr<Watch>> watch = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(watch.ok());
  std::shared_ptr<Watch> shared = *std::move(watch);
  std::thread closer([shared] {
    std::this_thread::sleep_for(50ms);
    shared->Close();
  });
  EXPECT_TRUE(ReturnsNulloptWithin(shared, 60s));
  closer.join();
  // Closed stays closed, even with events pending.
  MustCommitOne(*store, CreatePod("p"));
  EXPECT_FALSE(shared->Next(0ms)->has_value());
}

TEST(StoreWatchTest, DestroyingTheStoreEndsWatches) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::unique_ptr<Watch>> watch = store->WatchFrom("pods", "", 0);
  ASSERT_TRUE(watch.ok());
  std::shared_ptr<Watch> shared = *std::move(watch);
  std::thread closer([&store] {
    std::this_thread::sleep_for(50ms);
    store.reset();
  });
  EXPECT_TRUE(ReturnsNulloptWithin(shared, 60s));
  closer.join();
}

// Starts `watchers` watches from the current revision, one thread each, then commits `writes`
// single-op creates; every thread must see every write, in order, with nothing else.
void ExpectEveryWatcherSeesEveryWrite(int watchers, int writes) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < watchers; ++i) {
    absl::StatusOr<std::unique_ptr<Watch>> w = store->WatchFrom("pods", "default", 0);
    ASSERT_TRUE(w.ok()) << w.status();
    watches.push_back(*std::move(w));
  }
  std::atomic<int> failures = 0;
  std::vector<std::string> first_failure(watchers);
  std::vector<std::thread> threads;
  for (int t = 0; t < watchers; ++t) {
    threads.emplace_back([&, t] {
      int64_t previous_revision = 0;
      for (int i = 1; i <= writes; ++i) {
        absl::StatusOr<std::optional<Event>> e = watches[t]->Next(60s);
        std::string problem;
        if (!e.ok()) {
          problem = e.status().ToString();
        } else if (!e->has_value()) {
          problem = "timed out";
        } else if ((*e)->revision <= previous_revision || (*e)->key.name != fmt::format("p{}", i) ||
                   (*e)->type != EventType::kAdded) {
          problem = fmt::format("got {} {} after revision {}", (*e)->revision, (*e)->key.name,
                                previous_revision);
        } else {
          previous_revision = (*e)->revision;
        }
        if (!problem.empty()) {
          first_failure[t] = fmt::format("watcher {} at event {}: {}", t, i, problem);
          ++failures;
          return;
        }
      }
      if (absl::StatusOr<std::optional<Event>> extra = watches[t]->Next(0ms);
          !extra.ok() || extra->has_value()) {
        first_failure[t] = fmt::format("watcher {}: unexpected extra event", t);
        ++failures;
      }
    });
  }
  for (int i = 1; i <= writes; ++i) {
    // Another namespace and another resource interleave; the watchers must not see them.
    if (i % 100 == 0) MustCommitOne(*store, CreatePod(fmt::format("x{}", i), "other"));
    if (i % 100 == 50) {
      MustCommitOne(*store, Create(NodeKey(fmt::format("n{}", i)), boost::json::object{}));
    }
    MustCommitOne(*store, CreatePod(fmt::format("p{}", i)));
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (const std::string& f : first_failure) {
    if (!f.empty()) {
      ADD_FAILURE() << f;
      break;
    }
  }
}

TEST(StoreWatchTest, HundredConcurrentWatchersSeeThousandWritesInOrder) {
  ExpectEveryWatcherSeesEveryWrite(/*watchers=*/100, /*writes=*/1000);
}

TEST(StoreWatchTest, ThousandConcurrentWatchers) {
  ExpectEveryWatcherSeesEveryWrite(/*watchers=*/1000, /*writes=*/100);
}

// A child process writes pods in a loop and reports each acknowledged (index, revision) on a pipe;
// it is SIGKILLed mid-stream. Every acknowledged write must be in the database afterwards.
TEST(StoreCrashTest, AcknowledgedWritesSurviveSigkill) {
  TempDir dir;
  const std::string path = dir.File("db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
    if (!store.ok()) _exit(2);
    for (int64_t i = 0; i < 1000000; ++i) {
      std::vector<Op> ops;
      ops.push_back(Create(PodKey(fmt::format("p{}", i)),
                           MakePod(fmt::format("p{}", i)).Padding(1500).Obj()));
      absl::StatusOr<std::vector<Object>> result = (*store)->Commit(std::move(ops));
      if (!result.ok()) _exit(3);
      const int64_t ack[2] = {i, result->at(0).revision};
      if (write(fds[1], ack, sizeof ack) != static_cast<ssize_t>(sizeof ack)) _exit(4);
    }
    _exit(0);
  }
  close(fds[1]);

  std::vector<std::pair<int64_t, int64_t>> acks;
  auto read_ack = [&]() {
    int64_t ack[2];
    size_t got = 0;
    while (got < sizeof ack) {
      const ssize_t n = read(fds[0], reinterpret_cast<char*>(ack) + got, sizeof ack - got);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    acks.emplace_back(ack[0], ack[1]);
    return true;
  };
  while (acks.size() < 200 && read_ack()) {
  }
  ASSERT_EQ(acks.size(), 200u) << "the child stopped early";
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "status " << wstatus;
  while (read_ack()) {
  }
  close(fds[0]);

  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  int64_t newest = 0;
  for (const auto& [index, revision] : acks) {
    absl::StatusOr<Object> got = store->Get(PodKey(fmt::format("p{}", index)));
    ASSERT_TRUE(got.ok()) << "acknowledged write " << index << " lost: " << got.status();
    EXPECT_EQ(got->revision, revision);
    EXPECT_EQ(ResourceVersion(got->json), std::to_string(revision));
    newest = std::max(newest, revision);
  }
  EXPECT_GE(store->Revision(), newest);
  // At most the one write in flight at the kill may exist beyond the acknowledged ones.
  EXPECT_LE(store->List("pods", "").items.size(), acks.size() + 1);
  EXPECT_GT(MustCommitOne(*store, CreatePod("after-crash")), newest);
  RecordProperty("acknowledged_writes", static_cast<int>(acks.size()));
}

}  // namespace
}  // namespace muster::store
