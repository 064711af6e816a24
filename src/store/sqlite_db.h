#pragma once

// A thin RAII layer over the SQLite C API, private to the store: a connection, prepared statements
// that are reset (not re-prepared) after each use, and SQLite result codes turned into
// absl::Status. Nothing here knows about objects or revisions.
//
// Thread-safety: none. The connection is opened with SQLITE_OPEN_NOMUTEX; the owner serialises
// every use of a Db and of its statements.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace muster::store {

class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  ~Statement();

  // Parameters are 1-based, as in sqlite3_bind_*. Text is not copied (SQLITE_STATIC): the caller
  // keeps it alive until the statement is Run, stepped to completion, or Reset.
  void BindText(int index, std::string_view text);
  void BindInt64(int index, int64_t value);

  // Runs a statement that returns no rows, then resets it for reuse.
  absl::Status Run();
  // Steps once: true with a row available, false when done (then reset for reuse).
  absl::StatusOr<bool> Step();
  // Column accessors for the current row (0-based).
  std::string_view ColumnText(int index) const;
  int64_t ColumnInt64(int index) const;
  // Clears bindings and rewinds; safe to call at any time.
  void Reset();

 private:
  friend class Db;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

class Db {
 public:
  // Opens (creating if needed) the database file at `path`.
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path);
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  // Runs one or more SQL statements that return no rows (pragmas, DDL).
  absl::Status Exec(const std::string& sql);
  // Runs a single-row, single-column query (e.g. "PRAGMA journal_mode=WAL") and returns the text.
  absl::StatusOr<std::string> QueryText(const std::string& sql);
  absl::StatusOr<Statement> Prepare(std::string_view sql);

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// An absl::Status for SQLite result code `rc` on `db`: BUSY/LOCKED -> Unavailable, FULL and I/O
// errors -> Unavailable, everything else -> Internal. The message carries SQLite's text.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view what);

}  // namespace muster::store
