// pods/log: container output as text/plain, read from the file the node agent writes,
// <data_dir>/logs/<namespace>/<pod>/<container>.log (empty when there is none yet).
// follow=true streams: the file is polled for growth until the pod is deleted or finished,
// the client goes, or the server stops. tailLines and limitBytes cut the output; timestamps,
// previous and sinceSeconds are accepted (the agent's lines carry no separate timestamps, and
// there is no previous container instance).

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "apiserver/handlers.h"
#include "boost/json/parse.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

// The last `n` lines of `text` (a final line without '\n' counts).
std::string_view TailLines(std::string_view text, int64_t n) {
  if (n < 0) return text;
  if (n == 0) return {};
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  int64_t lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n') {
      if (++lines == n) break;
    }
    --pos;
  }
  return text.substr(pos);
}

std::string ReadFrom(const std::string& path, int64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(offset);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_size;
}

std::vector<std::string> ContainerNames(const json::object& pod, std::string_view list) {
  std::vector<std::string> names;
  const json::value* spec = pod.if_contains("spec");
  if (spec == nullptr || !spec->is_object()) return names;
  const json::value* cs = spec->get_object().if_contains(list);
  if (cs == nullptr || !cs->is_array()) return names;
  for (const auto& c : cs->get_array()) {
    if (!c.is_object()) continue;
    const json::value* n = c.get_object().if_contains("name");
    if (n != nullptr && n->is_string()) names.emplace_back(n->get_string());
  }
  return names;
}

std::string PodUid(const json::object& pod) {
  const json::value* meta = pod.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return "";
  const json::value* uid = meta->get_object().if_contains("uid");
  return uid != nullptr && uid->is_string() ? std::string(uid->get_string()) : "";
}

std::string PodPhase(const json::object& pod) {
  const json::value* status = pod.if_contains("status");
  if (status == nullptr || !status->is_object()) return "";
  const json::value* phase = status->get_object().if_contains("phase");
  return phase != nullptr && phase->is_string() ? std::string(phase->get_string()) : "";
}

}  // namespace

HttpResponse Handlers::Logs(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto live = store_.Get({res.StoreResource(), t.ns, t.name});
  if (!live.ok()) return ErrorResponse(NotFound(res.StoreResource(), t.name));
  json::error_code ec;
  json::value parsed = json::parse(*live->json, ec);
  if (ec || !parsed.is_object()) return ErrorResponse(DamagedObjectError(res, *live));
  const json::object& pod = parsed.get_object();

  std::vector<std::string> containers = ContainerNames(pod, "containers");
  std::vector<std::string> init = ContainerNames(pod, "initContainers");
  std::string container(req.Param("container"));
  if (container.empty()) {
    if (containers.size() != 1) {
      std::string all;
      for (const auto& c : containers) all += (all.empty() ? "" : " ") + c;
      return ErrorResponse(BadRequest(fmt::format(
          "a container name must be specified for pod {}, choose one of: [{}]", t.name, all)));
    }
    container = containers[0];
  } else if (std::find(containers.begin(), containers.end(), container) == containers.end() &&
             std::find(init.begin(), init.end(), container) == init.end()) {
    return ErrorResponse(
        BadRequest(fmt::format("container {} is not valid for pod {}", container, t.name)));
  }

  int64_t tail = -1, limit_bytes = -1;
  if (std::string_view v = req.Param("tailLines"); !v.empty()) {
    auto n = ParseInt(v);
    if (!n) return ErrorResponse(BadRequest(fmt::format("invalid tailLines: \"{}\"", v)));
    tail = *n;
  }
  if (std::string_view v = req.Param("limitBytes"); !v.empty()) {
    auto n = ParseInt(v);
    if (!n) return ErrorResponse(BadRequest(fmt::format("invalid limitBytes: \"{}\"", v)));
    limit_bytes = *n;
  }
  const bool follow = req.HasParam("follow") && QueryBool(req.Param("follow"));
  const bool previous = req.HasParam("previous") && QueryBool(req.Param("previous"));

  std::string path =
      options_.data_dir.empty()
          ? std::string()
          : fmt::format("{}/logs/{}/{}/{}.log", options_.data_dir, t.ns, t.name, container);
  std::string content = previous || path.empty() ? "" : ReadFrom(path, 0);
  const int64_t offset = static_cast<int64_t>(content.size());
  std::string first(TailLines(content, tail));
  if (limit_bytes >= 0 && static_cast<int64_t>(first.size()) > limit_bytes) {
    first.resize(static_cast<size_t>(limit_bytes));
  }

  HttpResponse r;
  r.content_type = "text/plain";
  if (!follow || previous || path.empty()) {
    r.body = std::move(first);
    return r;
  }
  const std::string uid = PodUid(pod);
  const store::Key key{res.StoreResource(), t.ns, t.name};
  const auto poll = options_.log_poll_interval;
  store::Store* store = &store_;
  r.stream = [store, key, uid, path, first = std::move(first), offset, poll](StreamSink& sink) {
    if (!first.empty() && !sink.Write(first)) return;
    int64_t at = offset;
    auto last_pod_check = std::chrono::steady_clock::now();
    bool finished = false;
    while (!sink.Cancelled()) {
      std::this_thread::sleep_for(poll);
      int64_t size = FileSize(path);
      if (size >= 0 && size < at) at = 0;  // truncated or replaced
      if (size > at) {
        std::string more = ReadFrom(path, at);
        at += static_cast<int64_t>(more.size());
        if (!sink.Write(more)) return;
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
