// pods/log: container output as text/plain, from the log the node agent writes,
// <data_dir>/logs/<namespace>/<pod>/<container>.log, and its index (common/container_log.h): when
// each line came and where each run of the container begins.
//
// PodLogOptions as kube-apiserver takes them: decoded from the query (a bad integer or sinceTime
// is 400 with Go's message), validated (ValidatePodLogOptions: 422 `PodLogOptions "p" is invalid`),
// the pod looked up (404), the container chosen (400). Then as kubelet serves them
// (pkg/kubelet/kuberuntime/logs): tailLines takes the last lines of the run, sinceSeconds and
// sinceTime drop the lines written before, timestamps prefixes each line with the time it came
// (RFC3339Nano, nine digits), limitBytes cuts the output (prefixes included), follow streams what
// the container writes next until the pod has finished or is gone.
//
// Which run: the one the pod's status names (containerStatuses[].containerID), else the last;
// `previous` the one of lastState.terminated.containerID, and kubelet's 400 `previous terminated
// container "c" in pod "p" not found` without one. A pod not bound to a node has no logs yet, as
// upstream (an empty answer), except that a log file already there is served: muster's own tests
// write such files. A log without an index is one run, its lines timed by the file's mtime.

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "api/text.h"
#include "api/time.h"
#include "apiserver/handlers.h"
#include "boost/json/parse.hpp"
#include "common/container_log.h"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

// --- Options -------------------------------------------------------------------------------------

struct LogOptions {
  std::string container;
  bool follow = false;
  bool previous = false;
  bool timestamps = false;
  std::optional<int64_t> since_seconds;
  std::optional<int64_t> since_time;  // unix seconds
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
  bool stream = false;  // `stream` was given
};

bool BoolParam(const HttpRequest& req, std::string_view name) {
  return req.HasParam(name) && QueryBool(req.Param(name));
}

// The query as the parameter codec converts it to v1.PodLogOptions (fields in struct order; the
// first that does not convert is the answer).
ApiResult<LogOptions> DecodeLogOptions(const HttpRequest& req) {
  LogOptions o;
  o.container = std::string(req.Param("container"));
  o.follow = BoolParam(req, "follow");
  o.previous = BoolParam(req, "previous");
  const auto integer = [&](std::string_view name,
                           std::optional<int64_t>& out) -> std::optional<ApiError> {
    if (!req.HasParam(name)) return std::nullopt;
    absl::StatusOr<int64_t> v = api::ParseGoInt64(req.Param(name));
    if (!v.ok()) return BadRequest(std::string(v.status().message()));
    out = *v;
    return std::nullopt;
  };
  if (auto e = integer("sinceSeconds", o.since_seconds)) return *e;
  if (req.HasParam("sinceTime")) {
    // Time.UnmarshalQueryParameter: "" and "null" are the zero time, which counts as given.
    std::string_view text = req.Param("sinceTime");
    if (text.empty() || text == "null") {
      o.since_time = std::numeric_limits<int64_t>::min() / 1000000000;
    } else {
      absl::StatusOr<int64_t> t = api::ParseGoRfc3339(text);
      if (!t.ok()) return BadRequest(std::string(t.status().message()));
      o.since_time = *t;
    }
  }
  o.timestamps = BoolParam(req, "timestamps");
  if (auto e = integer("tailLines", o.tail_lines)) return *e;
  if (auto e = integer("limitBytes", o.limit_bytes)) return *e;
  o.stream = req.HasParam("stream");
  return o;
}

// ValidatePodLogOptions with the PodLogsQuerySplitStreams gate off (v1.32's default).
std::optional<ApiError> ValidateLogOptions(const LogOptions& o, const std::string& pod) {
  std::vector<StatusCause> causes;
  if (o.tail_lines && *o.tail_lines < 0) {
    causes.push_back(
        {"FieldValueInvalid",
         fmt::format("Invalid value: {}: must be greater than or equal to 0", *o.tail_lines),
         "tailLines"});
  }
  if (o.limit_bytes && *o.limit_bytes < 1) {
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: must be greater than 0", *o.limit_bytes),
                      "limitBytes"});
  }
  if (o.since_seconds && o.since_time) {
    causes.push_back({"FieldValueForbidden",
                      "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
                      ""});
  } else if (o.since_seconds && *o.since_seconds < 1) {
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: must be greater than 0", *o.since_seconds),
                      "sinceSeconds"});
  }
  if (o.stream)
    causes.push_back({"FieldValueForbidden", "Forbidden: may not be specified", "stream"});
  if (causes.empty()) return std::nullopt;
  ApiError e = Invalid("PodLogOptions", "", pod, causes);
  // field.ErrorList's text writes "<field>: <body>" even for the root's empty field name.
  std::vector<std::string> parts;
  for (const StatusCause& c : causes) parts.push_back(fmt::format("{}: {}", c.field, c.message));
  std::string what = parts.size() == 1 ? parts[0] : fmt::format("[{}]", fmt::join(parts, ", "));
  e.message = fmt::format("PodLogOptions {} is invalid: {}", api::GoQuote(pod), what);
  return e;
}

// --- The pod -------------------------------------------------------------------------------------

std::vector<std::string> ContainerNames(const json::object& pod, std::string_view list) {
  std::vector<std::string> names;
  const json::object* spec = ObjectAt(pod, "spec");
  const json::value* cs = spec == nullptr ? nullptr : spec->if_contains(list);
  if (cs == nullptr || !cs->is_array()) return names;
  for (const auto& c : cs->get_array()) {
    if (c.is_object()) names.push_back(StringAt(&c.get_object(), "name"));
  }
  return names;
}

// The container's status in any of the pod's status lists; nullptr when there is none.
const json::object* ContainerStatus(const json::object& pod, std::string_view container) {
  const json::object* status = ObjectAt(pod, "status");
  if (status == nullptr) return nullptr;
  for (std::string_view list :
       {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
    const json::value* statuses = status->if_contains(list);
    if (statuses == nullptr || !statuses->is_array()) continue;
    for (const json::value& s : statuses->get_array()) {
      if (s.is_object() && StringAt(&s.get_object(), "name") == container) {
        return &s.get_object();
      }
    }
  }
  return nullptr;
}

std::string PodUid(const json::object& pod) { return StringAt(ObjectAt(pod, "metadata"), "uid"); }

std::string PodPhase(const json::object& pod) { return StringAt(ObjectAt(pod, "status"), "phase"); }

// --- The log -------------------------------------------------------------------------------------

std::string ReadRange(const std::string& path, int64_t begin, int64_t end) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(begin);
  if (end < 0) {
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
  std::string out(static_cast<size_t>(std::max<int64_t>(end - begin, 0)), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_size;
}

int64_t MtimeNanos(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Reads an index file as it grows (a follow reads on where it stopped; a shorter file is a new
// one).
class IndexReader {
 public:
  explicit IndexReader(std::string path) : path_(std::move(path)) {}
  const common::ContainerLogIndex& Update() {
    const int64_t size = FileSize(path_);
    if (size >= 0 && size < read_) {
      index_ = common::ContainerLogIndex();
      read_ = 0;
    }
    if (size > read_) {
      std::string more = ReadRange(path_, read_, size);
      read_ += static_cast<int64_t>(more.size());
      index_.Append(more);
    }
    return index_;
  }

 private:
  std::string path_;
  int64_t read_ = 0;
  common::ContainerLogIndex index_;
};

// The offset where the last `n` lines of `text` begin (a final line without '\n' counts).
size_t TailStart(std::string_view text, int64_t n) {
  if (n == 0) return text.size();
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  int64_t lines = 0;
  for (size_t pos = end; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++lines == n) return pos;
  }
  return 0;
}

// Log bytes in, what pods/log sends out: per line the since filter and the timestamp, over all
// the byte limit. Keeps its place across calls (a followed log arrives in pieces).
class LogFormatter {
 public:
  LogFormatter(const LogOptions& options, int64_t since_nanos, int64_t unknown_time_nanos)
      : timestamps_(options.timestamps),
        since_nanos_(since_nanos),
        unknown_time_nanos_(unknown_time_nanos),
        remaining_(options.limit_bytes.value_or(-1)) {}

  // Formats `bytes`, the log from `offset` on, onto `out`.
  void Feed(std::string_view bytes, int64_t offset, const common::ContainerLogIndex& index,
            std::string& out) {
    size_t i = 0;
    while (i < bytes.size() && !Done()) {
      const int64_t at = offset + static_cast<int64_t>(i);
      if (at_line_start_ || index.IsRunStart(at)) {
        const int64_t time = index.LineTime(at).value_or(unknown_time_nanos_);
        skipping_ = time < since_nanos_;
        if (!skipping_ && timestamps_) Emit(api::FormatNanoTimeFixed(time) + " ", out);
      }
      size_t stop = bytes.find('\n', i);
      stop = stop == std::string_view::npos ? bytes.size() : stop + 1;
      // A run that begins inside this stretch starts a line of its own.
      for (const common::ContainerLogRun& run : index.runs()) {
        if (run.begin > at && run.begin < offset + static_cast<int64_t>(stop)) {
          stop = static_cast<size_t>(run.begin - offset);
        }
      }
      if (!skipping_) Emit(bytes.substr(i, stop - i), out);
      at_line_start_ = bytes[stop - 1] == '\n';
      i = stop;
    }
  }
  // Whether limitBytes has been sent: the answer ends there.
  [[nodiscard]] bool Done() const { return remaining_ == 0; }

 private:
  void Emit(std::string_view text, std::string& out) {
    if (remaining_ >= 0 && static_cast<int64_t>(text.size()) > remaining_) {
      text = text.substr(0, static_cast<size_t>(remaining_));
    }
    out.append(text);
    if (remaining_ >= 0) remaining_ -= static_cast<int64_t>(text.size());
  }

  const bool timestamps_;
  const int64_t since_nanos_;
  const int64_t unknown_time_nanos_;
  int64_t remaining_;  // -1: no limit
  bool at_line_start_ = true;
  bool skipping_ = false;
};

}  // namespace

ApiResult<std::string> ChooseContainer(const json::object& pod, const std::string& requested,
                                       const std::string& pod_name) {
  // pod/strategy.go validateContainer: one container needs no name; any other must be the pod's.
  std::vector<std::string> containers = ContainerNames(pod, "containers");
  std::vector<std::string> all = ContainerNames(pod, "initContainers");
  all.insert(all.end(), containers.begin(), containers.end());
  for (std::string& c : ContainerNames(pod, "ephemeralContainers")) all.push_back(std::move(c));
  if (requested.empty()) {
    if (containers.empty()) {
      return BadRequest(fmt::format("a container name must be specified for pod {}", pod_name));
    }
    if (containers.size() != 1) {
      return BadRequest(
          fmt::format("a container name must be specified for pod {}, choose one of: [{}]",
                      pod_name, fmt::join(all, " ")));
    }
    return containers[0];
  }
  if (std::find(all.begin(), all.end(), requested) == all.end()) {
    return BadRequest(fmt::format("container {} is not valid for pod {}", requested, pod_name));
  }
  return requested;
}

HttpResponse Handlers::Logs(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto decoded = DecodeLogOptions(req);
  if (!decoded.ok()) return ErrorResponse(decoded.error());
  const LogOptions& options = *decoded;
  if (auto invalid = ValidateLogOptions(options, t.name)) return ErrorResponse(*invalid);

  auto live = store_.Get({res.StoreResource(), t.ns, t.name});
  if (!live.ok()) return ErrorResponse(NotFound(res.StoreResource(), t.name));
  json::error_code ec;
  json::value parsed = json::parse(*live->json, ec);
  if (ec || !parsed.is_object()) return ErrorResponse(DamagedObjectError(res, *live));
  const json::object& pod = parsed.get_object();

  ApiResult<std::string> chosen = ChooseContainer(pod, options.container, t.name);
  if (!chosen.ok()) return ErrorResponse(chosen.error());
  const std::string& container = *chosen;

  HttpResponse r;
  r.content_type = "text/plain";
  const bool bound = !StringAt(ObjectAt(pod, "spec"), "nodeName").empty();
  const json::object* status = ContainerStatus(pod, container);
  std::string run_id = StringAt(status, "containerID");
  if (options.previous) {
    if (!bound) return r;
    // kubelet's validateContainerLogStatus.
    if (status == nullptr) {
      return ErrorResponse(BadRequest(fmt::format("container {} in pod {} is not available",
                                                  api::GoQuote(container), api::GoQuote(t.name))));
    }
    const json::object* last = ObjectAt(*status, "lastState");
    run_id = StringAt(last == nullptr ? nullptr : ObjectAt(*last, "terminated"), "containerID");
    if (run_id.empty()) {
      return ErrorResponse(
          BadRequest(fmt::format("previous terminated container {} in pod {} not found",
                                 api::GoQuote(container), api::GoQuote(t.name))));
    }
  }

  if (options_.data_dir.empty()) return r;
  const std::string path =
      fmt::format("{}/logs/{}/{}/{}.log", options_.data_dir, t.ns, t.name, container);
  auto index = std::make_shared<IndexReader>(common::ContainerLogIndexPath(path));
  const common::ContainerLogIndex& now_index = index->Update();

  // The run's bytes: [begin, end), end -1 for the end of the log.
  int64_t begin = 0;
  int64_t end = -1;
  const common::ContainerLogRun* run = run_id.empty() ? nullptr : now_index.FindRun(run_id);
  if (options.previous) {
    if (run == nullptr) return r;  // that run's output is not kept (a simulated node's)
  } else if (run == nullptr && !now_index.runs().empty()) {
    run = &now_index.runs().back();
  }
  if (run != nullptr) {
    begin = run->begin;
    end = run->end;
  }
  const bool follow = options.follow && !options.previous;
  if (follow) end = -1;  // a restart's output follows on
  std::string content = ReadRange(path, begin, end);
  const int64_t read_to = begin + static_cast<int64_t>(content.size());
  size_t from = options.tail_lines ? TailStart(content, *options.tail_lines) : 0;

  // Seconds held to what nanoseconds in 64 bits can say (years 1678 to 2261).
  const auto nanos = [](int64_t seconds) {
    constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 1000000000;
    return std::clamp(seconds, -kLimit, kLimit) * 1000000000;
  };
  int64_t since_nanos = std::numeric_limits<int64_t>::min();
  if (options.since_seconds) {
    since_nanos = nanos(Now() - std::min(*options.since_seconds, Now() + (int64_t{1} << 40)));
  } else if (options.since_time) {
    since_nanos = nanos(*options.since_time);
  }
  auto formatter = std::make_shared<LogFormatter>(options, since_nanos, MtimeNanos(path));
  std::string first;
  formatter->Feed(std::string_view(content).substr(from), begin + static_cast<int64_t>(from),
                  now_index, first);
  if (!follow || formatter->Done()) {
    r.body = std::move(first);
    return r;
  }

  const std::string uid = PodUid(pod);
  const store::Key key{res.StoreResource(), t.ns, t.name};
  const auto poll = options_.log_poll_interval;
  store::Store* store = &store_;
  r.stream = [store, key, uid, path, index, formatter, first = std::move(first), read_to,
              poll](StreamSink& sink) {
    if (!first.empty() && !sink.Write(first)) return;
    int64_t at = read_to;
    auto last_pod_check = std::chrono::steady_clock::now();
    bool finished = false;
    while (!sink.Cancelled()) {
      std::this_thread::sleep_for(poll);
      const int64_t size = FileSize(path);
      if (size >= 0 && size < at) at = 0;  // truncated or replaced
      if (size > at) {
        std::string more = ReadRange(path, at, size);
        std::string out;
        formatter->Feed(more, at, index->Update(), out);
        at += static_cast<int64_t>(more.size());
        if (!out.empty() && !sink.Write(out)) return;
        if (formatter->Done()) return;
        continue;
      }
      if (finished) return;  // the pod ended and its output is drained
      auto now = std::chrono::steady_clock::now();
      if (now - last_pod_check >= std::chrono::seconds(1)) {
        last_pod_check = now;
        auto live = store->Get(key);
        if (!live.ok()) return;  // deleted
        json::error_code ec;
        json::value v = json::parse(*live->json, ec);
        if (ec || !v.is_object() || PodUid(v.get_object()) != uid) return;
        std::string phase = PodPhase(v.get_object());
        if (phase == "Succeeded" || phase == "Failed") finished = true;
      }
    }
  };
  return r;
}

}  // namespace muster::apiserver
