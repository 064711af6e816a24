#include "store/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

#include "fmt/format.h"

namespace muster::store {

absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = fmt::format("sqlite: {}: {} (code {})", what, detail, rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::BindText(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

void Statement::BindInt64(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

absl::Status Statement::Run() {
  const int rc = sqlite3_step(stmt_);
  absl::Status status = rc == SQLITE_DONE || rc == SQLITE_ROW
                            ? absl::OkStatus()
                            : SqliteError(db_, rc, sqlite3_sql(stmt_));
  Reset();
  return status;
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  absl::Status status =
      rc == SQLITE_DONE ? absl::OkStatus() : SqliteError(db_, rc, sqlite3_sql(stmt_));
  Reset();
  if (!status.ok()) return status;
  return false;
}

std::string_view Statement::ColumnText(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  if (text == nullptr) return {};
  return std::string_view(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, index)));
}

int64_t Statement::ColumnInt64(int index) const { return sqlite3_column_int64(stmt_, index); }

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(raw, rc, fmt::format("open {}", path));
    sqlite3_close(raw);
    return status;
  }
  sqlite3_extended_result_codes(raw, 1);
  return std::unique_ptr<Db>(new Db(raw));
}

Db::~Db() { sqlite3_close(db_); }

absl::Status Db::Exec(const std::string& sql) {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return absl::OkStatus();
  return SqliteError(db_, rc, sql);
}

absl::StatusOr<std::string> Db::QueryText(const std::string& sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::InternalError(fmt::format("sqlite: {}: no row", sql));
  std::string text(stmt->ColumnText(0));
  stmt->Reset();
  return text;
}

absl::StatusOr<Statement> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, fmt::format("prepare {}", sql));
  return Statement(db_, stmt);
}

}  // namespace muster::store
