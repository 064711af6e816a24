#include "common/container_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <iterator>
#include <optional>

#include "fmt/format.h"

namespace muster::common {
namespace {

int64_t UnixNanos(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

absl::Status WriteAll(int fd, std::string_view bytes, std::string_view what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(fmt::format("writing {}: {}", what, std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ContainerLogIndexPath(std::string_view log_path) {
  return fmt::format("{}.index", log_path);
}

absl::StatusOr<ContainerLogWriter> ContainerLogWriter::Open(
    const std::string& log_path, bool truncate, std::string_view run_id,
    std::chrono::system_clock::time_point now) {
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0);
  const int log_fd = ::open(log_path.c_str(), flags, 0644);
  if (log_fd < 0) {
    return absl::InternalError(fmt::format("opening {}: {}", log_path, std::strerror(errno)));
  }
  const std::string index_path = ContainerLogIndexPath(log_path);
  const int index_fd = ::open(index_path.c_str(), flags, 0644);
  if (index_fd < 0) {
    const int err = errno;
    ::close(log_fd);
    return absl::InternalError(fmt::format("opening {}: {}", index_path, std::strerror(err)));
  }
  struct stat st;
  const int64_t size = ::fstat(log_fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  ContainerLogWriter writer(log_fd, index_fd, size);
  if (absl::Status s =
          WriteAll(index_fd, fmt::format("R {} {} {}\n", size, UnixNanos(now), run_id), index_path);
      !s.ok()) {
    return s;
  }
  return writer;
}

ContainerLogWriter::ContainerLogWriter(int log_fd, int index_fd, int64_t size)
    : log_fd_(log_fd), index_fd_(index_fd), size_(size) {}

ContainerLogWriter::ContainerLogWriter(ContainerLogWriter&& other) noexcept
    : log_fd_(std::exchange(other.log_fd_, -1)),
      index_fd_(std::exchange(other.index_fd_, -1)),
      size_(other.size_),
      at_line_start_(other.at_line_start_) {}

ContainerLogWriter& ContainerLogWriter::operator=(ContainerLogWriter&& other) noexcept {
  if (this != &other) {
    Close();
    log_fd_ = std::exchange(other.log_fd_, -1);
    index_fd_ = std::exchange(other.index_fd_, -1);
    size_ = other.size_;
    at_line_start_ = other.at_line_start_;
  }
  return *this;
}

ContainerLogWriter::~ContainerLogWriter() { Close(); }

void ContainerLogWriter::Close() {
  if (log_fd_ >= 0) ::close(log_fd_);
  if (index_fd_ >= 0) ::close(index_fd_);
  log_fd_ = index_fd_ = -1;
}

absl::Status ContainerLogWriter::Append(std::string_view bytes,
                                        std::chrono::system_clock::time_point now) {
  if (bytes.empty()) return absl::OkStatus();
  std::optional<int64_t> line_start;
  if (at_line_start_) {
    line_start = size_;
  } else if (size_t newline = bytes.find('\n'); newline + 1 < bytes.size()) {
    line_start = size_ + static_cast<int64_t>(newline) + 1;
  }
  if (line_start) {
    absl::Status s =
        WriteAll(index_fd_, fmt::format("T {} {}\n", *line_start, UnixNanos(now)), "index");
    if (!s.ok()) return s;
  }
  absl::Status s = WriteAll(log_fd_, bytes, "log");
  // The log's end is where the next append lands (O_APPEND), whatever part of this one failed.
  struct stat st;
  size_ = ::fstat(log_fd_, &st) == 0 ? static_cast<int64_t>(st.st_size)
                                     : size_ + static_cast<int64_t>(bytes.size());
  at_line_start_ = bytes.back() == '\n';
  return s;
}

void ContainerLogIndex::Append(std::string_view text) {
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(text);
      return;
    }
    if (partial_.empty()) {
      AddRecord(text.substr(0, newline));
    } else {
      partial_.append(text.substr(0, newline));
      AddRecord(partial_);
      partial_.clear();
    }
    text.remove_prefix(newline + 1);
  }
}

void ContainerLogIndex::AddRecord(std::string_view line) {
  // "<tag> <offset> <nanos>[ <run id>]": the run id is the rest of the line.
  std::vector<std::string_view> fields;
  while (fields.size() < 3) {
    const size_t space = line.find(' ');
    fields.push_back(line.substr(0, space));
    if (space == std::string_view::npos) {
      line = {};
      break;
    }
    line.remove_prefix(space + 1);
    if (fields.size() == 3) fields.push_back(line);
  }
  const auto number = [](std::string_view text, int64_t& out) {
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return !text.empty() && ec == std::errc() && ptr == end;
  };
  int64_t offset = 0;
  int64_t nanos = 0;
  if (fields.size() < 3 || !number(fields[1], offset) || !number(fields[2], nanos) || offset < 0) {
    return;
  }
  // Records come in log order; one that goes back (a damaged index) is left out.
  if (!times_.empty() && offset < times_.back().first) return;
  if (fields[0] == "R" && fields.size() == 4) {
    if (!runs_.empty()) runs_.back().end = offset;
    runs_.push_back(ContainerLogRun{std::string(fields[3]), offset, -1});
  } else if (fields[0] != "T" || fields.size() != 3) {
    return;
  }
  times_.emplace_back(offset, nanos);
}

const ContainerLogRun* ContainerLogIndex::FindRun(std::string_view id) const {
  // The last one: a run id names one run, but should one repeat, the later output is its own.
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    if (it->id == id) return &*it;
  }
  return nullptr;
}

std::optional<int64_t> ContainerLogIndex::LineTime(int64_t offset) const {
  auto it = std::upper_bound(times_.begin(), times_.end(), offset,
                             [](int64_t value, const std::pair<int64_t, int64_t>& record) {
                               return value < record.first;
                             });
  if (it == times_.begin()) return std::nullopt;
  return std::prev(it)->second;
}

bool ContainerLogIndex::IsRunStart(int64_t offset) const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [&](const ContainerLogRun& run) { return run.begin == offset; });
}

}  // namespace muster::common
