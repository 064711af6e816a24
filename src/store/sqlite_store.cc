// Store backed by one SQLite file (WAL; synchronous FULL or NORMAL per StoreOptions) with every
// object also held in memory.
//
// Write path, serialised by write_mu_: (1) plan the commit against the in-memory state plus the
// effects of the commit's earlier ops, stamping and serialising each new state once; (2) write
// the plan in one BEGIN IMMEDIATE ... COMMIT transaction, together with the new global revision
// in `meta`; (3) only after SQLite acknowledged, apply the plan to memory and append its events to
// the watch ring, both under state_mu_ so that a List's revision and the watch history agree.
// A failure in (1) or (2) leaves memory and disk untouched.
//
// Group commit: Commit calls that arrive while another is being written wait in a queue; the
// next writer takes the whole queue and writes it as one SQLite transaction (one WAL append, one
// fsync with fsync_every_commit), each call planned in arrival order against the state its
// predecessors leave, with its own dense revisions. A call whose plan fails (conflict, missing
// object) fails alone; a failed SQLite write fails every call of the batch and applies none.
// Each caller returns once its batch is durable and applied, as before.
//
// Reads (Get, List) take state_mu_ shared and never touch SQLite. The writer reads memory without
// state_mu_ during planning: it is the only thread that mutates it.
//
// The database is opened with locking_mode=EXCLUSIVE: a second Store (in this or any process) on
// the same file fails to open instead of forking the revision counter.
//
// Opening: a new file is created 0600 and gets the schema and the marker (application_id,
// user_version) in one transaction, so a file is either empty (never written: refused, like a
// truncated store) or a whole store. An existing file is checked read-only before anything is
// written to it, so that what is refused is left as it was.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "api/json_parse.h"  // JsonParseOptions only: header-only
#include "boost/json/monotonic_resource.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/stream_parser.hpp"
#include "fmt/format.h"
#include "store/event_ring.h"
#include "store/object_text.h"
#include "store/sqlite_db.h"
#include "store/store.h"

namespace muster::store {
namespace {

// What marks a muster store: the SQLite header's application_id ("MUST") and the schema version
// in user_version, both written with the tables when the store is created.
constexpr int64_t kApplicationId = 0x4D555354;
constexpr int64_t kSchemaVersion = 1;

constexpr std::string_view kSchema = R"sql(
CREATE TABLE objects(
  resource  TEXT    NOT NULL,
  namespace TEXT    NOT NULL,
  name      TEXT    NOT NULL,
  revision  INTEGER NOT NULL,
  json      TEXT    NOT NULL,
  PRIMARY KEY(resource, namespace, name));
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,
  value INTEGER NOT NULL);
)sql";

// The refusal of a file that is not a usable muster store, naming it and what to do.
absl::Status NotAStore(const std::string& path, std::string_view why) {
  return absl::FailedPreconditionError(
      fmt::format("{}: {}: not a muster store. Move it away, or start over with an empty store "
                  "with --reset (which deletes it)",
                  path, why));
}

// Creates `path` empty with mode 0600 whatever the umask (SQLite gives the -wal and -shm files
// it creates the database file's mode); true when it did. An existing file is narrowed to 0600,
// with its companions, and refused when it is empty: SQLite would take a truncated store for a
// new one, and the cluster would silently start empty.
absl::StatusOr<bool> CreateIfMissing(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return NotAStore(path, "not a regular file");
    if (st.st_size == 0) return NotAStore(path, "the file is empty (zero length)");
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string file = path + suffix;
      if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) ::chmod(file.c_str(), 0600);
    }
    return false;
  }
  if (errno != ENOENT) {
    return absl::UnavailableError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  ::fchmod(fd, 0600);
  ::close(fd);
  return true;
}

// Whether the file starts with SQLite's header string.
bool HasSqliteHeader(const std::string& path) {
  static constexpr std::string_view kMagic("SQLite format 3\0", 16);
  std::ifstream in(path, std::ios::binary);
  std::string head(kMagic.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == kMagic;
}

struct Entry {
  int64_t revision = 0;
  std::shared_ptr<const std::string> json;
  // The parsed state, while a reader (a recent event, an in-process informer's cache) holds it.
  std::weak_ptr<const boost::json::value> parsed;
  bool damaged = false;  // Object::damaged; only loaded entries can be
  TextSpan managed;       // where `json` holds metadata.managedFields (Object::managed_offset)
};

// A state as text and parsed.
struct Stamped {
  std::shared_ptr<const std::string> json;
  std::shared_ptr<const boost::json::value> parsed;
  TextSpan managed;
};

// Objects of one resource by (namespace, name), in List order. Transparent so that lookups by
// string_view pairs do not copy the key.
using NsName = std::pair<std::string, std::string>;
using NsNameView = std::pair<std::string_view, std::string_view>;
struct NsNameLess {
  using is_transparent = void;
  static NsNameView View(const NsName& k) { return {k.first, k.second}; }
  static NsNameView View(const NsNameView& k) { return k; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return View(a) < View(b);
  }
};
using ResourceObjects = std::map<NsName, Entry, NsNameLess>;

std::string KeyText(const Key& key) {
  return key.ns.empty() ? fmt::format("{} {}", key.resource, key.name)
                        : fmt::format("{} {}/{}", key.resource, key.ns, key.name);
}

// Whether `v` holds a number that is not finite. Every write asks, so this walk builds no path.
bool HasNonFinite(const boost::json::value& v) {
  if (const double* d = v.if_double()) return !std::isfinite(*d);
  if (const boost::json::array* a = v.if_array()) {
    return std::any_of(a->begin(), a->end(), [](const auto& e) { return HasNonFinite(e); });
  }
  if (const boost::json::object* o = v.if_object()) {
    return std::any_of(o->begin(), o->end(), [](const auto& m) { return HasNonFinite(m.value()); });
  }
  return false;
}

// Whether `v` holds a number that is not finite; if so `path` (empty on entry) is its path,
// "spec.x[2]".
bool FindNonFinite(const boost::json::value& v, std::string& path) {
  if (const double* d = v.if_double()) return !std::isfinite(*d);
  const size_t mark = path.size();
  if (const boost::json::array* a = v.if_array()) {
    for (size_t i = 0; i < a->size(); ++i) {
      path += fmt::format("[{}]", i);
      if (FindNonFinite((*a)[i], path)) return true;
      path.resize(mark);
    }
  } else if (const boost::json::object* o = v.if_object()) {
    for (const auto& [key, member] : *o) {
      if (mark > 0) path += '.';
      path += std::string_view(key);
      if (FindNonFinite(member, path)) return true;
      path.resize(mark);
    }
  }
  return false;
}

// Sets metadata.resourceVersion on `object` and serialises it; `object` moves into the result.
// Every state the store writes comes through here: it refuses what would not parse back. With
// `managed` (Op::managed_fields), that text is the state's metadata.managedFields.
absl::StatusOr<Stamped> Stamp(const Key& key, boost::json::value& object, int64_t revision,
                              const std::optional<std::string>& managed = std::nullopt) {
  boost::json::object* fields = object.if_object();
  if (fields == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("{}: the object must be a JSON object", KeyText(key)));
  }
  // boost::json would write an infinity or NaN as a bare token no JSON parser reads.
  if (std::string path; HasNonFinite(object) && FindNonFinite(object, path)) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: {}: the number is not finite, and JSON cannot represent it", KeyText(key), path));
  }
  boost::json::value& metadata = (*fields)["metadata"];
  if (metadata.is_null()) metadata.emplace_object();
  boost::json::object* meta = metadata.if_object();
  if (meta == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("{}: metadata must be a JSON object", KeyText(key)));
  }
  (*meta)["resourceVersion"] = std::to_string(revision);
  Stamped out;
  TextSpan span;
  out.json = std::make_shared<const std::string>(WriteObjectText(
      *fields, managed ? std::optional<std::string_view>(*managed) : std::nullopt, span));
  out.managed = span;
  // The parsed state leaves field ownership out (Object::parsed): the text keeps it.
  meta->erase("managedFields");
  out.parsed = std::make_shared<const boost::json::value>(std::move(object));
  return out;
}

// A stored state re-stamped with a later revision (the final state of a delete). A damaged one
// cannot be read: `given` (Op::object) stands in for it, with the key's name and namespace.
absl::StatusOr<Stamped> Restamp(const Key& key, const Entry& entry, const boost::json::value& given,
                                int64_t revision) {
  if (entry.damaged) {
    boost::json::value object = given.is_object() ? given : boost::json::object();
    boost::json::value& metadata = object.get_object()["metadata"];
    if (!metadata.is_object()) metadata.emplace_object();
    metadata.get_object()["name"] = key.name;
    if (!key.ns.empty()) metadata.get_object()["namespace"] = key.ns;
    return Stamp(key, object, revision);
  }
  if (std::shared_ptr<const boost::json::value> parsed = entry.parsed.lock();
      parsed != nullptr && entry.managed.size == 0) {
    boost::json::value object = *parsed;
    return Stamp(key, object, revision);
  }
  boost::system::error_code error;
  boost::json::value object =
      boost::json::parse(*entry.json, error, {}, muster::api::JsonParseOptions());
  if (error) {
    return absl::InternalError(
        fmt::format("{}: stored object is not valid JSON: {}", KeyText(key), error.message()));
  }
  return Stamp(key, object, revision);
}

class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<Db> db, StoreOptions options)
      : db_(std::move(db)), options_(options) {}
  ~SqliteStore() override {
    if (ring_ != nullptr) ring_->Shutdown();
  }

  // `created`: the file was just created empty (CreateIfMissing); otherwise it must hold a store.
  absl::Status Init(const std::string& path, bool created);

  absl::StatusOr<std::vector<Object>> Commit(std::vector<Op> ops) override;
  absl::StatusOr<Object> Get(const Key& key) const override;
  ListResult List(const std::string& resource, const std::string& ns) const override;
  int64_t Revision() const override { return revision_.load(std::memory_order_acquire); }
  std::vector<DamagedObject> Damaged() const override;
  absl::StatusOr<std::unique_ptr<Watch>> WatchFrom(const std::string& resource,
                                                   const std::string& ns, int64_t after) override {
    return EventRing::WatchFrom(ring_, resource, ns, after);
  }

 private:
  // One op, validated and serialised, ready to write.
  struct Planned {
    EventType type = EventType::kAdded;
    Key key;
    Entry state;  // the new state; for a delete, the final state stamped with its revision
    std::shared_ptr<const boost::json::value> parsed;  // `state` parsed
    std::shared_ptr<const std::string> previous;
    std::shared_ptr<const boost::json::value> previous_parsed;  // when still in memory
  };

  // States written by planned, not yet applied ops (of this commit, or of earlier calls in the
  // same batch); nullopt for a key they deleted.
  using Overlay =
      std::map<std::tuple<std::string, std::string, std::string>, std::optional<Entry>>;

  // One Commit call waiting in the group-commit queue (on its caller's stack).
  struct Waiting {
    std::vector<Op>* ops = nullptr;
    absl::StatusOr<std::vector<Object>> result;
    bool done = false;
  };

  // Whether the file is a muster store (else NotAStore), read only; true when it lacks the marker
  // (a store made before the marker existed).
  absl::StatusOr<bool> CheckSchema(const std::string& path);
  // Requires write_mu_. The committed state of `key` (no state_mu_ needed: see the file comment).
  const Entry* FindCommitted(const Key& key) const;
  // Plans `ops` as one commit after the states in `batch`; on success adds its effects to it.
  absl::StatusOr<std::vector<Planned>> Plan(std::vector<Op>& ops, int64_t base,
                                            Overlay& batch) const;
  absl::Status Persist(const std::vector<Planned>& plan, int64_t revision);
  void Apply(std::vector<Planned>& plan, int64_t revision);
  // Plans, writes and applies the calls of one batch, setting each one's result.
  void CommitBatch(const std::vector<Waiting*>& batch);

  const std::unique_ptr<Db> db_;  // destroyed after the statements below
  const StoreOptions options_;
  Statement begin_, commit_, rollback_, upsert_, erase_, set_revision_;

  std::mutex write_mu_;  // serialises CommitBatch
  std::mutex queue_mu_;  // guards queue_ and writing_
  std::condition_variable queue_cv_;
  std::vector<Waiting*> queue_;  // calls waiting for the next batch
  bool writing_ = false;         // a caller is writing a batch
  mutable std::shared_mutex state_mu_;
  absl::flat_hash_map<std::string, ResourceObjects> objects_;  // guarded by state_mu_
  std::atomic<int64_t> revision_ = 0;                          // written under state_mu_
  std::shared_ptr<EventRing> ring_;
};

absl::Status SqliteStore::Init(const std::string& path, bool created) {
  if (!created && !HasSqliteHeader(path)) return NotAStore(path, "not an SQLite database");
  // EXCLUSIVE before WAL: the WAL index then lives in heap memory, and the lock taken by the
  // first write below is held until close.
  if (absl::Status s = db_->Exec("PRAGMA locking_mode=EXCLUSIVE"); !s.ok()) return s;
  // Checked before anything is written: a file that is not a store is left as it was.
  absl::StatusOr<bool> unmarked = false;
  if (!created) unmarked = CheckSchema(path);
  if (!unmarked.ok()) return unmarked.status();
  absl::StatusOr<std::string> mode = db_->QueryText("PRAGMA journal_mode=WAL");
  if (!mode.ok()) return mode.status();
  if (*mode != "wal" && *mode != "memory") {
    return absl::InternalError(fmt::format("sqlite: cannot enable WAL (journal_mode {})", *mode));
  }
  if (absl::Status s = db_->Exec(options_.fsync_every_commit ? "PRAGMA synchronous=FULL"
                                                              : "PRAGMA synchronous=NORMAL");
      !s.ok()) {
    return s;
  }
  // A checkpoint copies the WAL's pages into the database file and syncs both (with
  // synchronous=NORMAL the only syncs there are); SQLite's default runs one every 1,000 pages
  // (4 MiB), which under a steady stream of pod writes copies the same B-tree pages again and
  // again. Every 10,000 pages (40 MiB of WAL, the order of etcd's 64 MiB WAL segments) copies each
  // hot page once per ten of those: store_benchmark's BM_UpdatePod took 74-89 us of real time per
  // update against 87-141 us, its CPU time the same. Durability is unchanged: a commit is in the
  // WAL when it is acknowledged, whether or not it was copied.
  if (absl::Status s = db_->Exec("PRAGMA wal_autocheckpoint=10000"); !s.ok()) return s;
  // Take the exclusive lock now, so that a second store on this file fails here.
  if (absl::Status s = db_->Exec("BEGIN EXCLUSIVE; COMMIT"); !s.ok()) return s;
  const std::string mark = fmt::format("PRAGMA application_id={}; PRAGMA user_version={};",
                                       kApplicationId, kSchemaVersion);
  if (created) {
    if (absl::Status s = db_->Exec(fmt::format("BEGIN; {} {} COMMIT", mark, kSchema)); !s.ok()) {
      return s;
    }
  } else if (*unmarked) {
    // A store created before the marker existed: its tables are muster's, so mark it.
    if (absl::Status s = db_->Exec(mark); !s.ok()) return s;
  }

  int64_t revision = 0;
  {
    absl::StatusOr<Statement> load =
        db_->Prepare("SELECT resource, namespace, name, revision, json FROM objects");
    if (!load.ok()) return load.status();
    while (true) {
      absl::StatusOr<bool> row = load->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      auto json = std::make_shared<const std::string>(load->ColumnText(4));
      const bool damaged = StoredObjectProblem(*json).has_value();
      const TextSpan managed = damaged ? TextSpan{} : FindManagedFields(*json);
      Entry entry{.revision = load->ColumnInt64(3),
                  .json = std::move(json),
                  .parsed = {},
                  .damaged = damaged,
                  .managed = managed};
      revision = std::max(revision, entry.revision);
      objects_[std::string(load->ColumnText(0))].emplace(
          NsName(load->ColumnText(1), load->ColumnText(2)), std::move(entry));
    }
    absl::StatusOr<Statement> meta = db_->Prepare("SELECT value FROM meta WHERE key = 'revision'");
    if (!meta.ok()) return meta.status();
    absl::StatusOr<bool> row = meta->Step();
    if (!row.ok()) return row.status();
    const bool counted = *row && meta->ColumnInt64(0) >= revision;
    if (*row) revision = std::max(revision, meta->ColumnInt64(0));
    meta->Reset();
    // A counter below an object's revision (a damaged file) would hand out revisions again, and
    // resourceVersions would go backwards: it is repaired upward, on disk too.
    if (!counted && revision > 0) {
      if (absl::Status s =
              db_->Exec(fmt::format("INSERT INTO meta(key, value) VALUES('revision', {0}) "
                                    "ON CONFLICT(key) DO UPDATE SET value = {0}",
                                    revision));
          !s.ok()) {
        return s;
      }
    }
  }
  revision_.store(revision);
  ring_ = std::make_shared<EventRing>(options_.history, revision);

  struct {
    Statement* stmt;
    std::string_view sql;
  } const statements[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&upsert_,
       "INSERT INTO objects(resource, namespace, name, revision, json) VALUES(?1, ?2, ?3, ?4, ?5) "
       "ON CONFLICT(resource, namespace, name) DO UPDATE SET revision = excluded.revision, "
       "json = excluded.json"},
      {&erase_, "DELETE FROM objects WHERE resource = ?1 AND namespace = ?2 AND name = ?3"},
      {&set_revision_,
       "INSERT INTO meta(key, value) VALUES('revision', ?1) "
       "ON CONFLICT(key) DO UPDATE SET value = excluded.value"},
  };
  for (const auto& [stmt, sql] : statements) {
    absl::StatusOr<Statement> prepared = db_->Prepare(sql);
    if (!prepared.ok()) return prepared.status();
    *stmt = *std::move(prepared);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> SqliteStore::CheckSchema(const std::string& path) {
  absl::StatusOr<std::string> id = db_->QueryText("PRAGMA application_id");
  if (!id.ok()) return id.status();
  absl::StatusOr<std::string> version = db_->QueryText("PRAGMA user_version");
  if (!version.ok()) return version.status();
  const bool marked = *id == std::to_string(kApplicationId);
  if (!marked && *id != "0") {
    return NotAStore(path, fmt::format("an SQLite database of another application "
                                       "(application_id {})",
                                       *id));
  }
  if (marked && *version != std::to_string(kSchemaVersion)) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: a muster store of schema version {}, which this muster (version {}) cannot read", path,
        *version, kSchemaVersion));
  }
  absl::StatusOr<std::string> tables = db_->QueryText(
      "SELECT (SELECT count(*) FROM pragma_table_info('objects') WHERE name IN "
      "('resource', 'namespace', 'name', 'revision', 'json')) = 5 AND "
      "(SELECT count(*) FROM pragma_table_info('meta') WHERE name IN ('key', 'value')) = 2");
  if (!tables.ok()) return tables.status();
  if (*tables != "1") {
    return NotAStore(path, marked ? "muster's tables are missing (the file is damaged)"
                                  : "an SQLite database without muster's tables");
  }
  return !marked;
}

const Entry* SqliteStore::FindCommitted(const Key& key) const {
  auto resource = objects_.find(key.resource);
  if (resource == objects_.end()) return nullptr;
  auto it = resource->second.find(NsNameView(key.ns, key.name));
  return it == resource->second.end() ? nullptr : &it->second;
}

absl::StatusOr<std::vector<SqliteStore::Planned>> SqliteStore::Plan(std::vector<Op>& ops,
                                                                    int64_t base,
                                                                    Overlay& batch) const {
  // States written by earlier ops of this commit.
  Overlay pending;
  std::vector<Planned> plan;
  plan.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Op& op = ops[i];
    const Key& key = op.key;
    const int64_t revision = base + static_cast<int64_t>(i) + 1;
    if (key.resource.empty() || key.name.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("op {}: resource and name must not be empty", i));
    }
    const Entry* current = nullptr;
    if (auto it = pending.find({key.resource, key.ns, key.name}); it != pending.end()) {
      current = it->second ? &*it->second : nullptr;
    } else if (auto b = batch.find({key.resource, key.ns, key.name}); b != batch.end()) {
      current = b->second ? &*b->second : nullptr;
    } else {
      current = FindCommitted(key);
    }

    Planned planned;
    planned.key = key;
    if (op.kind == OpKind::kCreate) {
      if (current != nullptr) {
        return absl::AlreadyExistsError(fmt::format("{} already exists", KeyText(key)));
      }
      planned.type = EventType::kAdded;
    } else {
      if (current == nullptr) return absl::NotFoundError(fmt::format("{} not found", KeyText(key)));
      if (op.expected_revision && *op.expected_revision != current->revision) {
        return absl::AbortedError(fmt::format(
            "{}: the object has been modified: expected revision {}, stored revision {}",
            KeyText(key), *op.expected_revision, current->revision));
      }
      planned.type = op.kind == OpKind::kUpdate ? EventType::kModified : EventType::kDeleted;
      planned.previous = current->json;
      planned.previous_parsed = current->parsed.lock();
    }

    absl::StatusOr<Stamped> stamped = op.kind == OpKind::kDelete
                                          ? Restamp(key, *current, op.object, revision)
                                          : Stamp(key, op.object, revision, op.managed_fields);
    if (!stamped.ok()) return stamped.status();
    if (op.kind != OpKind::kDelete && options_.max_object_bytes > 0 &&
        stamped->json->size() > options_.max_object_bytes) {
      return absl::ResourceExhaustedError(
          fmt::format("{}: the object is {} bytes, more than the limit of {}", KeyText(key),
                      stamped->json->size(), options_.max_object_bytes));
    }
    planned.state = Entry{.revision = revision,
                          .json = stamped->json,
                          .parsed = stamped->parsed,
                          .damaged = false,
                          .managed = stamped->managed};
    planned.parsed = std::move(stamped->parsed);
    pending[{key.resource, key.ns, key.name}] =
        op.kind == OpKind::kDelete ? std::nullopt : std::optional<Entry>(planned.state);
    plan.push_back(std::move(planned));
  }
  for (auto& [key, state] : pending) batch[key] = std::move(state);
  return plan;
}

absl::Status SqliteStore::Persist(const std::vector<Planned>& plan, int64_t revision) {
  if (absl::Status s = begin_.Run(); !s.ok()) return s;
  absl::Status status = absl::OkStatus();
  for (const Planned& p : plan) {
    Statement& stmt = p.type == EventType::kDeleted ? erase_ : upsert_;
    stmt.BindText(1, p.key.resource);
    stmt.BindText(2, p.key.ns);
    stmt.BindText(3, p.key.name);
    if (p.type != EventType::kDeleted) {
      stmt.BindInt64(4, p.state.revision);
      stmt.BindText(5, *p.state.json);
    }
    status = stmt.Run();
    if (!status.ok()) break;
  }
  if (status.ok()) {
    set_revision_.BindInt64(1, revision);
    status = set_revision_.Run();
  }
  if (status.ok()) status = commit_.Run();
  if (!status.ok()) rollback_.Run().IgnoreError();  // fails harmlessly if SQLite already did
  return status;
}

void SqliteStore::Apply(std::vector<Planned>& plan, int64_t revision) {
  std::vector<Event> events;
  events.reserve(plan.size());
  std::unique_lock lock(state_mu_);
  for (Planned& p : plan) {
    ResourceObjects& resource = objects_[p.key.resource];
    if (p.type == EventType::kDeleted) {
      resource.erase(resource.find(NsNameView(p.key.ns, p.key.name)));
    } else {
      auto it = resource.find(NsNameView(p.key.ns, p.key.name));
      if (it == resource.end()) {
        resource.emplace(NsName(p.key.ns, p.key.name), p.state);
      } else {
        it->second = p.state;
      }
    }
    events.push_back(Event{.type = p.type,
                           .revision = p.state.revision,
                           .key = std::move(p.key),
                           .object = std::move(p.state.json),
                           .previous = std::move(p.previous),
                           .parsed = std::move(p.parsed),
                           .previous_parsed = std::move(p.previous_parsed)});
  }
  revision_.store(revision, std::memory_order_release);
  ring_->Append(std::move(events));
}

absl::StatusOr<std::vector<Object>> SqliteStore::Commit(std::vector<Op> ops) {
  if (ops.empty()) return std::vector<Object>();
  Waiting me;
  me.ops = &ops;
  std::unique_lock lock(queue_mu_);
  queue_.push_back(&me);
  queue_cv_.wait(lock, [&] { return me.done || !writing_; });
  if (me.done) return std::move(me.result);
  // This caller writes the batch: every call queued so far, its own included.
  writing_ = true;
  std::vector<Waiting*> batch;
  batch.swap(queue_);
  lock.unlock();
  CommitBatch(batch);
  lock.lock();
  for (Waiting* w : batch) w->done = true;
  writing_ = false;
  lock.unlock();
  queue_cv_.notify_all();
  return std::move(me.result);
}

void SqliteStore::CommitBatch(const std::vector<Waiting*>& batch) {
  std::lock_guard write_lock(write_mu_);
  int64_t revision = revision_.load(std::memory_order_relaxed);
  Overlay overlay;
  std::vector<Waiting*> planned;
  std::vector<Planned> all;
  for (Waiting* w : batch) {
    absl::StatusOr<std::vector<Planned>> plan = Plan(*w->ops, revision, overlay);
    if (!plan.ok()) {
      w->result = plan.status();
      continue;
    }
    revision += static_cast<int64_t>(plan->size());
    std::vector<Object> result;
    result.reserve(plan->size());
    for (Planned& p : *plan) {
      result.push_back(Object{.key = p.key,
                              .revision = p.state.revision,
                              .json = p.state.json,
                              .parsed = p.parsed,
                              .damaged = false,
                              .managed_offset = p.state.managed.offset,
                              .managed_size = p.state.managed.size});
      all.push_back(std::move(p));
    }
    w->result = std::move(result);
    planned.push_back(w);
  }
  if (all.empty()) return;
  if (absl::Status s = Persist(all, revision); !s.ok()) {
    for (Waiting* w : planned) w->result = s;
    return;
  }
  Apply(all, revision);
}

absl::StatusOr<Object> SqliteStore::Get(const Key& key) const {
  std::shared_lock lock(state_mu_);
  const Entry* entry = FindCommitted(key);
  if (entry == nullptr) return absl::NotFoundError(fmt::format("{} not found", KeyText(key)));
  return Object{.key = key,
                .revision = entry->revision,
                .json = entry->json,
                .parsed = entry->parsed.lock(),
                .damaged = entry->damaged,
                .managed_offset = entry->managed.offset,
                .managed_size = entry->managed.size};
}

ListResult SqliteStore::List(const std::string& resource, const std::string& ns) const {
  ListResult result;
  std::shared_lock lock(state_mu_);
  result.revision = revision_.load(std::memory_order_relaxed);
  auto objects = objects_.find(resource);
  if (objects == objects_.end()) return result;
  const ResourceObjects& all = objects->second;
  auto it = ns.empty() ? all.begin() : all.lower_bound(NsNameView(ns, ""));
  for (; it != all.end() && (ns.empty() || it->first.first == ns); ++it) {
    result.items.push_back(
        Object{.key = Key{.resource = resource, .ns = it->first.first, .name = it->first.second},
               .revision = it->second.revision,
               .json = it->second.json,
               .parsed = it->second.parsed.lock(),
               .damaged = it->second.damaged,
               .managed_offset = it->second.managed.offset,
               .managed_size = it->second.managed.size});
  }
  return result;
}

std::vector<DamagedObject> SqliteStore::Damaged() const {
  std::vector<DamagedObject> out;
  std::shared_lock lock(state_mu_);
  for (const auto& [resource, objects] : objects_) {
    for (const auto& [ns_name, entry] : objects) {
      if (!entry.damaged) continue;
      out.push_back({.key = {.resource = resource, .ns = ns_name.first, .name = ns_name.second},
                     .revision = entry.revision,
                     .problem = StoredObjectProblem(*entry.json).value_or("")});
    }
  }
  lock.unlock();
  std::sort(out.begin(), out.end(), [](const DamagedObject& a, const DamagedObject& b) {
    return std::tie(a.key.resource, a.key.ns, a.key.name) <
           std::tie(b.key.resource, b.key.ns, b.key.name);
  });
  return out;
}

}  // namespace

std::optional<std::string> StoredObjectProblem(std::string_view json) {
  // Open checks every stored object: a monotonic resource halves the cost of the parse.
  unsigned char buffer[8192];
  boost::json::monotonic_resource resource(buffer, sizeof buffer);
  boost::json::stream_parser parser({}, muster::api::JsonParseOptions());
  parser.reset(&resource);
  boost::system::error_code error;
  const size_t parsed = parser.write(json.data(), json.size(), error);
  if (!error) parser.finish(error);
  if (error) return fmt::format("not valid JSON: {} at byte {}", error.message(), parsed);
  const boost::json::value object = parser.release();
  if (!object.is_object()) return "not a JSON object";
  const boost::json::value* metadata = object.get_object().if_contains("metadata");
  if (metadata != nullptr && !metadata->is_object()) return "metadata is not a JSON object";
  if (std::string path; HasNonFinite(object) && FindNonFinite(object, path)) {
    return fmt::format("{}: the number is not finite", path);
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
  absl::StatusOr<bool> created = CreateIfMissing(path);
  if (!created.ok()) return created.status();
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path);
  if (!db.ok()) return db.status();
  auto store = std::make_unique<SqliteStore>(*std::move(db), options);
  if (absl::Status s = store->Init(path, *created); !s.ok()) return s;
  return store;
}

}  // namespace muster::store
