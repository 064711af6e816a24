#pragma once

// The revisioned object store behind the API server: every object of every resource, one global
// revision counter (etcd style), each write a SQLite transaction (WAL), and an in-memory history
// of recent changes for watches. Objects are JSON; the store stamps metadata.resourceVersion.
//
// Thread-safety: every method may be called from any thread. Reads are served from memory;
// writes are serialised and durable against a crash of the process before they return (see
// StoreOptions::fsync_every_commit for power loss).

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/value.hpp"

namespace muster::store {

// "pods", "nodes", "jobs.batch.volcano.sh" ...: the resource plus group, as the API names it.
struct Key {
  std::string resource;
  std::string ns;  // empty for cluster-scoped resources
  std::string name;
  bool operator==(const Key&) const = default;
};

struct Object {
  Key key;
  int64_t revision = 0;  // the revision of the write that produced this state
  std::shared_ptr<const std::string> json;  // serialized object, resourceVersion stamped
  // The same state parsed, when the store still has it in memory (it keeps it only while some
  // reader holds it, or for recent events); null otherwise. Immutable and shared by every reader,
  // so that in-process watchers and filters need not parse `json` again. It leaves out
  // metadata.managedFields, which `json` keeps: field ownership is read only by the API server's
  // writes (api::ManagedFieldsInText), as kube's informers drop it, and on a pod it is often the
  // larger part of the parsed state that every in-process informer would share.
  std::shared_ptr<const boost::json::value> parsed;
  // `json` cannot be served (StoredObjectProblem says why): an object the file held when the
  // store was opened, written before Commit refused what cannot be read back, or damaged on
  // disk. It can still be deleted (see Op::object).
  bool damaged = false;
  // Where `json` holds the value of metadata.managedFields: ManagedFieldsText(). A write that
  // leaves field ownership as it was hands that text on (Op::managed_fields) instead of parsing
  // and serialising it again.
  size_t managed_offset = 0;
  size_t managed_size = 0;  // 0: the object has none

  // metadata.managedFields's value as `json` holds it (JSON text); empty when it has none.
  std::string_view ManagedFieldsText() const {
    if (json == nullptr || managed_size == 0 || managed_offset + managed_size > json->size()) {
      return {};
    }
    return std::string_view(*json).substr(managed_offset, managed_size);
  }
};

enum class OpKind { kCreate, kUpdate, kDelete };

struct Op {
  OpKind kind = OpKind::kCreate;
  Key key;
  // kCreate/kUpdate: the new state (metadata.resourceVersion is set). kDelete: ignored, unless
  // the stored object is damaged (Object::damaged): then, when it is a JSON object, the final
  // state the delete reports in place of the unreadable one, its metadata.name and namespace
  // set from the key (a damaged object's final state is just those otherwise).
  boost::json::value object;
  // kUpdate/kDelete: fail with Aborted (-> HTTP 409 Conflict) unless the stored revision matches.
  std::optional<int64_t> expected_revision;
  // kCreate/kUpdate: when set, the state's metadata.managedFields, as JSON text (empty: none),
  // written as the last member of metadata in place of any `object` holds. The text is stored as
  // given, not parsed or checked again: it must be a JSON value as the store writes one (a stored
  // object's ManagedFieldsText, or boost::json::serialize's text of a managedFields value). The
  // stored text is then byte for byte that of `object` holding it as its last metadata member.
  std::optional<std::string> managed_fields;
};

enum class EventType { kAdded, kModified, kDeleted };

struct Event {
  EventType type = EventType::kAdded;
  int64_t revision = 0;
  Key key;
  // ADDED/MODIFIED: the new state. DELETED: the last state, stamped with the delete's revision.
  std::shared_ptr<const std::string> object;
  // MODIFIED/DELETED: the state before (for selector transitions); null for ADDED.
  std::shared_ptr<const std::string> previous;
  // `object` and `previous` parsed, where the store still has them (see Object::parsed, which
  // they are: without metadata.managedFields): set for the newest events, null for older ones
  // (parse the text then).
  std::shared_ptr<const boost::json::value> parsed;
  std::shared_ptr<const boost::json::value> previous_parsed;
};

// An object whose stored text cannot be served (Object::damaged), and why.
struct DamagedObject {
  Key key;
  int64_t revision = 0;
  std::string problem;  // StoredObjectProblem's answer
};

struct ListResult {
  std::vector<Object> items;  // sorted by namespace, then name
  int64_t revision = 0;       // the store's revision when the list was taken
};

class Watch;

struct StoreOptions {
  // Number of recent events kept for watches; a watch from before them gets OutOfRange (410).
  size_t history = 20000;
  // true: fsync every commit (SQLite synchronous=FULL): an acknowledged write survives power
  // loss, at the disk's fsync rate (about 300 commits/s on the development VM). false (default):
  // synchronous=NORMAL in WAL mode: an acknowledged write survives the process being killed
  // (SIGKILL, crash) and the database is never corrupted, but a power loss may drop the last
  // commits; writes run at memory speed.
  bool fsync_every_commit = false;
  // The largest object a create or update may store, serialised: 1.5 MiB, etcd's default
  // --max-request-bytes, so that what kube-apiserver refuses is refused here too. A larger one
  // fails its whole commit with ResourceExhausted. 0: no limit.
  size_t max_object_bytes = 1536 * 1024;
};

class Store {
 public:
  // Opens the SQLite database at `path` and loads every object. A missing file is created with
  // mode 0600, as are SQLite's -wal and -shm files (an existing store is narrowed to 0600). A
  // file that is not a muster store fails with FailedPrecondition naming it and what to do: an
  // empty one, one that is not SQLite, an SQLite database of another application or without
  // muster's tables; never does it open as an empty store. A revision counter below the newest
  // object's revision (a damaged file) is raised to it, so resourceVersions never go backwards.
  // The file stays locked while the Store lives: a second Open of it, from this or another
  // process, fails with Unavailable (two writers would fork the revision counter). The history
  // starts empty, so watches may start at Revision() or later.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     StoreOptions options = {});
  virtual ~Store() = default;

  // Applies all ops in one transaction: all succeed or none is stored. Errors: AlreadyExists
  // (create of an existing key), NotFound (update/delete of a missing key), Aborted (revision
  // mismatch), InvalidArgument (an object that is not a JSON object, or that holds a number
  // JSON cannot write: an infinity or NaN, which would serialise as a bare Infinity or NaN and
  // never parse back). Returns the stored objects in op order (for a delete: its final state).
  virtual absl::StatusOr<std::vector<Object>> Commit(std::vector<Op> ops) = 0;

  virtual absl::StatusOr<Object> Get(const Key& key) const = 0;
  // Every object of `resource`, in `ns` when not empty.
  virtual ListResult List(const std::string& resource, const std::string& ns) const = 0;
  virtual int64_t Revision() const = 0;
  // The damaged objects (Object::damaged) still stored, sorted by resource, namespace and name.
  // Only Open finds them: nothing Commit stores can be damaged.
  virtual std::vector<DamagedObject> Damaged() const = 0;

  // Events of `resource` (in `ns` when not empty) with revision > `after`. `after` = 0 means
  // "from now" (the caller lists first). Error OutOfRange ("too old resource version: N (M)", M
  // being the oldest `after` still served) when `after` predates the history and an event of
  // `resource` may have been lost; writes of other resources alone never expire a watch.
  // InvalidArgument for an empty resource or a negative `after`.
  virtual absl::StatusOr<std::unique_ptr<Watch>> WatchFrom(const std::string& resource,
                                                           const std::string& ns,
                                                           int64_t after) = 0;
};

// Why a stored object's text cannot be served, or nullopt when it can: it must parse as a JSON
// object (its metadata, where present, an object too) whose numbers are all finite, as every
// state Commit stores is. "not valid JSON: syntax error at byte 93", "spec.x: the number is
// not finite".
std::optional<std::string> StoredObjectProblem(std::string_view json);

// One watcher's view of the event stream. Thread-safe; Close() may come from another thread.
class Watch {
 public:
  virtual ~Watch() = default;
  // The next event, waiting up to `timeout`; nullopt on timeout or once closed (by Close or by
  // the Store's destruction). Error OutOfRange, from then on, when this watcher fell behind the
  // retained history and lost an event of its resource (the client must relist).
  virtual absl::StatusOr<std::optional<Event>> Next(std::chrono::milliseconds timeout) = 0;
  virtual void Close() = 0;
  // For a watcher that is not a thread waiting in Next (an event loop serving many): `ready` is
  // called, from the writer's thread and outside the store's locks, after events of this
  // watch's resource were appended (Next(0) may then have one), and once when the watch is
  // closed or the store goes away. It must be cheap and must not call into the store. Null
  // stops the calls, and so does Close(); one already under way may still finish after either
  // returns, so `ready` must stay safe to call until the Watch is destroyed.
  virtual void SetReadyCallback(std::function<void()> ready) = 0;
};

}  // namespace muster::store
