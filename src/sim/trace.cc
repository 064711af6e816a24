#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/time.h"
#include "fmt/format.h"

namespace muster::sim {
namespace {

// A CSV file read line by line against a fixed set of known columns. Fields are split on ','
// (the traces quote nothing); a trailing '\r' is dropped.
class CsvReader {
 public:
  static absl::StatusOr<CsvReader> Open(const std::string& path,
                                        const std::vector<std::string>& known,
                                        const std::vector<std::string>& required) {
    CsvReader r;
    r.path_ = path;
    r.in_.open(path);
    if (!r.in_) return absl::NotFoundError(fmt::format("{}: cannot open the file", path));
    std::string header;
    if (!r.ReadLine(header)) return absl::InvalidArgumentError(fmt::format("{}: empty file", path));
    std::vector<std::string> names = absl::StrSplit(header, ',');
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& n = names[i];
      if (std::find(known.begin(), known.end(), n) == known.end()) {
        return absl::InvalidArgumentError(
            fmt::format("{}:1: unknown column \"{}\" (known: {})", path, n, absl::StrJoin(known, ", ")));
      }
      if (r.index_.count(n)) {
        return absl::InvalidArgumentError(fmt::format("{}:1: column \"{}\" appears twice", path, n));
      }
      r.index_[n] = static_cast<int>(i);
    }
    for (const auto& n : required) {
      if (!r.index_.count(n)) {
        return absl::InvalidArgumentError(
            fmt::format("{}:1: missing column \"{}\" (the header has: {})", path, n, header));
      }
    }
    r.columns_ = static_cast<int>(names.size());
    return r;
  }

  // The next non-empty row; false at the end of the file. A row with the wrong number of fields
  // sets status().
  bool Next() {
    std::string line;
    while (ReadLine(line)) {
      if (line.empty()) continue;
      fields_ = absl::StrSplit(line, ',');
      if (static_cast<int>(fields_.size()) != columns_) {
        status_ = Error(fmt::format("{} fields where the header has {}", fields_.size(), columns_));
        return false;
      }
      ++rows_;
      return true;
    }
    return false;
  }

  bool Has(const std::string& column) const { return index_.count(column) > 0; }
  std::string Text(const std::string& column) const {
    auto it = index_.find(column);
    return it == index_.end() ? std::string() : fields_[it->second];
  }
  absl::StatusOr<int64_t> Int(const std::string& column) const {
    std::string t = Text(column);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
      return Error(fmt::format("column {}: \"{}\" is not an integer", column, t));
    }
    return v;
  }
  absl::StatusOr<int64_t> NonNegativeInt(const std::string& column) const {
    auto v = Int(column);
    if (v.ok() && *v < 0) return Error(fmt::format("column {}: {} is negative", column, *v));
    return v;
  }
  // Empty means absent.
  absl::StatusOr<std::optional<int64_t>> OptionalInt(const std::string& column) const {
    if (!Has(column) || Text(column).empty()) return std::optional<int64_t>();
    auto v = Int(column);
    if (!v.ok()) return v.status();
    return std::optional<int64_t>(*v);
  }
  absl::StatusOr<double> Number(const std::string& column) const {
    std::string t = Text(column);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) {
      return Error(fmt::format("column {}: \"{}\" is not a number", column, t));
    }
    return v;
  }

  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(fmt::format("{}:{}: {}", path_, line_, what));
  }
  const absl::Status& status() const { return status_; }
  int rows() const { return rows_; }
  const std::string& path() const { return path_; }

 private:
  bool ReadLine(std::string& line) {
    if (!std::getline(in_, line)) return false;
    ++line_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }

  std::string path_;
  std::ifstream in_;
  std::map<std::string, int> index_;
  std::vector<std::string> fields_;
  int columns_ = 0;
  int line_ = 0;
  int rows_ = 0;
  absl::Status status_;
};

#define MUSTER_ASSIGN(lhs, expr)        \
  do {                                  \
    auto _v = (expr);                   \
    if (!_v.ok()) return _v.status();   \
    lhs = *std::move(_v);               \
  } while (0)

// "YYYY-MM-DD HH:MM:SS" (UTC, as openb writes it) as Unix seconds; nullopt when malformed.
std::optional<int64_t> ParseTimestamp(const std::string& t) {
  if (t.size() != 19 || t[10] != ' ') return std::nullopt;
  std::string rfc3339 = t;
  rfc3339[10] = 'T';
  rfc3339 += 'Z';
  return api::ParseUnixTime(rfc3339);
}

}  // namespace

absl::StatusOr<std::vector<TracePod>> LoadOpenbPods(const std::string& path) {
  auto reader = CsvReader::Open(
      path,
      {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
       "creation_time", "deletion_time", "scheduled_time"},
      {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!reader.ok()) return reader.status();
  CsvReader& r = *reader;
  std::vector<TracePod> pods;
  while (r.Next()) {
    TracePod p;
    p.name = r.Text("name");
    if (p.name.empty()) return r.Error("column name: empty");
    MUSTER_ASSIGN(p.cpu_milli, r.NonNegativeInt("cpu_milli"));
    MUSTER_ASSIGN(p.memory_mib, r.NonNegativeInt("memory_mib"));
    int64_t gpus = 0;
    MUSTER_ASSIGN(gpus, r.NonNegativeInt("num_gpu"));
    if (gpus > 1024) return r.Error(fmt::format("column num_gpu: {} GPUs for one pod", gpus));
    p.num_gpu = static_cast<int>(gpus);
    MUSTER_ASSIGN(p.gpu_milli, r.Int("gpu_milli"));
    p.gpu_milli = std::clamp<int64_t>(p.gpu_milli, 0, 1000);
    p.gpu_spec = r.Text("gpu_spec");
    p.qos = r.Text("qos");
    p.pod_phase = r.Text("pod_phase");
    MUSTER_ASSIGN(p.creation_time, r.OptionalInt("creation_time"));
    MUSTER_ASSIGN(p.deletion_time, r.OptionalInt("deletion_time"));
    MUSTER_ASSIGN(p.scheduled_time, r.OptionalInt("scheduled_time"));
    pods.push_back(std::move(p));
  }
  if (!r.status().ok()) return r.status();
  if (pods.empty()) return absl::InvalidArgumentError(fmt::format("{}: no pods in the trace", path));
  return pods;
}

absl::StatusOr<std::vector<TraceNode>> LoadOpenbNodes(const std::string& path) {
  auto reader = CsvReader::Open(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"},
                                {"sn", "cpu_milli", "memory_mib", "gpu"});
  if (!reader.ok()) return reader.status();
  CsvReader& r = *reader;
  std::vector<TraceNode> nodes;
  while (r.Next()) {
    TraceNode n;
    n.name = r.Text("sn");
    if (n.name.empty()) return r.Error("column sn: empty");
    MUSTER_ASSIGN(n.cpu_milli, r.NonNegativeInt("cpu_milli"));
    MUSTER_ASSIGN(n.memory_mib, r.NonNegativeInt("memory_mib"));
    int64_t gpus = 0;
    MUSTER_ASSIGN(gpus, r.NonNegativeInt("gpu"));
    if (gpus > 1024) return r.Error(fmt::format("column gpu: {} GPUs on one node", gpus));
    n.gpus = static_cast<int>(gpus);
    n.model = r.Text("model");
    if (n.gpus > 0 && n.model.empty()) return r.Error("column model: empty for a node with GPUs");
    nodes.push_back(std::move(n));
  }
  if (!r.status().ok()) return r.status();
  if (nodes.empty()) return absl::InvalidArgumentError(fmt::format("{}: no nodes in the list", path));
  return nodes;
}

absl::StatusOr<std::vector<PhillyJob>> LoadPhillyJobs(const std::string& path) {
  auto reader = CsvReader::Open(path, {"timestamp", "duration", "num_gpus", "gpu_time", "cluster"},
                                {"timestamp", "duration", "num_gpus"});
  if (!reader.ok()) return reader.status();
  CsvReader& r = *reader;
  std::vector<PhillyJob> jobs;
  while (r.Next()) {
    PhillyJob j;
    std::string ts = r.Text("timestamp");
    auto t = ParseTimestamp(ts);
    if (!t) return r.Error(fmt::format("column timestamp: \"{}\" is not YYYY-MM-DD HH:MM:SS", ts));
    j.submit_time = *t;
    MUSTER_ASSIGN(j.duration, r.Number("duration"));
    if (j.duration < 0) return r.Error(fmt::format("column duration: {} is negative", j.duration));
    int64_t gpus = 0;
    MUSTER_ASSIGN(gpus, r.NonNegativeInt("num_gpus"));
    if (gpus > 100000) return r.Error(fmt::format("column num_gpus: {} GPUs for one job", gpus));
    j.gpus = static_cast<int>(gpus);
    if (r.Has("gpu_time") && !r.Text("gpu_time").empty()) {
      double gpu_time = 0;
      MUSTER_ASSIGN(gpu_time, r.Number("gpu_time"));
      (void)gpu_time;  // duration x num_gpus; recomputed where needed
    }
    j.cluster = r.Text("cluster");
    jobs.push_back(std::move(j));
  }
  if (!r.status().ok()) return r.status();
  if (jobs.empty()) return absl::InvalidArgumentError(fmt::format("{}: no jobs in the trace", path));
  return jobs;
}

#undef MUSTER_ASSIGN

}  // namespace muster::sim
