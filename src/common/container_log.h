#pragma once

// Container logs on disk: what a node agent's process runtime writes and the API server's pods/log
// reads, under <data_dir>/logs/<namespace>/<pod>/:
//
//   <container>.log        what the container wrote to stdout and stderr, byte for byte, its runs
//                          one after the other (a new pod starts it afresh)
//   <container>.log.index  one text record per line, in the order they were written:
//                            R <offset> <unix nanos> <run id>   a run starts at byte <offset>
//                            T <offset> <unix nanos>            the line that starts at <offset>
//                                                               (and any after it, up to the next
//                                                               record's offset) was read then
//
// kubelet's runtimes keep one CRI-format file per run, every line prefixed with its time and
// stream. Here the log stays exactly what the container wrote (people and tests read it as it is)
// and the index adds what `kubectl logs --timestamps`, `--since`, `--since-time` and `--previous`
// need. The run id is the containerID the pod status reports for that run
// (`muster://<pod uid>-<container>-<restart count>`), so that the API server finds a run's bytes
// from the pod's containerStatuses. A log without an index (written by hand, or by an agent from
// before the index) reads as one run whose line times are unknown.
//
// Thread-safety: a ContainerLogWriter is used by one thread at a time; ContainerLogIndex is a
// value.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::common {

// "<log_path>.index".
std::string ContainerLogIndexPath(std::string_view log_path);

// Appends a container's output to its log, and the times and run starts to the index.
class ContainerLogWriter {
 public:
  // Opens (creates) the log and its index in an existing folder, both emptied first when
  // `truncate`, and records that the run `run_id` starts at the log's current end, at `now`.
  static absl::StatusOr<ContainerLogWriter> Open(const std::string& log_path, bool truncate,
                                                 std::string_view run_id,
                                                 std::chrono::system_clock::time_point now);

  ContainerLogWriter(ContainerLogWriter&& other) noexcept;
  ContainerLogWriter& operator=(ContainerLogWriter&& other) noexcept;
  ContainerLogWriter(const ContainerLogWriter&) = delete;
  ContainerLogWriter& operator=(const ContainerLogWriter&) = delete;
  ~ContainerLogWriter();

  // Appends output read at `now`, with a time record for the first line that starts in it (the
  // record first, so that a reader never sees a line older than its record says). An error (a
  // full disk) loses this output; later appends still try.
  absl::Status Append(std::string_view bytes, std::chrono::system_clock::time_point now);

 private:
  ContainerLogWriter(int log_fd, int index_fd, int64_t size);
  void Close();

  int log_fd_ = -1;
  int index_fd_ = -1;
  int64_t size_ = 0;           // bytes in the log
  bool at_line_start_ = true;  // a run's first byte starts a line, whatever came before it
};

struct ContainerLogRun {
  std::string id;
  int64_t begin = 0;  // the log offset of its first byte
  int64_t end = -1;   // the next run's begin; -1 for the last run (the log's end)
};

// An index as far as it has been read (Append may be called again as the file grows).
class ContainerLogIndex {
 public:
  // Adds the next bytes of the index file. A record is taken once its line is complete;
  // malformed records are skipped.
  void Append(std::string_view text);

  // The runs, in order. Empty for a log without an index: then the whole log is one run.
  [[nodiscard]] const std::vector<ContainerLogRun>& runs() const { return runs_; }
  // The run with this id; nullptr when none.
  [[nodiscard]] const ContainerLogRun* FindRun(std::string_view id) const;
  // Unix nanoseconds when the line starting at `offset` was written: the last record at or before
  // it; nullopt when there is none.
  [[nodiscard]] std::optional<int64_t> LineTime(int64_t offset) const;
  // Whether a run begins at `offset`, which then starts a line.
  [[nodiscard]] bool IsRunStart(int64_t offset) const;

 private:
  void AddRecord(std::string_view line);

  std::string partial_;  // an incomplete last line
  std::vector<ContainerLogRun> runs_;
  std::vector<std::pair<int64_t, int64_t>> times_;  // (offset, unix nanos), offsets ascending
};

}  // namespace muster::common
