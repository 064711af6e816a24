#include "cmd/preflight.h"

#include <set>
#include <string_view>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "cmd/process.h"
#include "fmt/format.h"

namespace muster::cmd {
namespace {

namespace json = boost::json;

std::string Describe(const client::Resource& r) {
  return r.group.empty() ? r.plural : fmt::format("{}.{}", r.plural, r.group);
}

absl::Status FromCode(int status, const std::string& what, const std::string& body) {
  std::string message;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const json::value* m = v.get_object().if_contains("message"); m && m->is_string()) {
      message = std::string(m->get_string());
    }
  }
  if (message.empty()) message = fmt::format("HTTP {}", status);
  if (status == 401) {
    return absl::UnauthenticatedError(fmt::format(
        "the API server refuses our credentials (401 Unauthorized) on {}: {}; the token may have "
        "expired or the kubeconfig's user may be wrong",
        what, message));
  }
  if (status == 403) {
    return absl::PermissionDeniedError(fmt::format(
        "the API server forbids {} (403 Forbidden): {}; grant it with the RBAC in deploy/rbac/",
        what, message));
  }
  return absl::UnavailableError(fmt::format("{}: {}", what, message));
}

}  // namespace

absl::Status CheckApi(client::Client& api, const std::vector<client::Resource>& resources) {
  std::set<std::string> checked;
  for (const client::Resource& r : resources) {
    const std::string gv = r.ApiVersion();
    if (!checked.insert(gv).second) continue;
    const std::string path = r.group.empty() ? "/api/" + r.version : "/apis/" + gv;
    client::Request request;
    request.method = "GET";
    request.path = path;
    auto response = api.transport().Do(request);
    if (!response.ok()) {
      return absl::UnavailableError(fmt::format("cannot reach the API server: {}",
                                                std::string(response.status().message())));
    }
    if (response->status == 404) {
      return absl::NotFoundError(fmt::format(
          "the API server does not serve {} ({}): install the CustomResourceDefinitions with "
          "`kubectl apply -k deploy/` (or `muster manifests crds | kubectl apply -f -`)",
          gv, Describe(r)));
    }
    if (response->status < 200 || response->status > 299) {
      return FromCode(response->status, "discovery of " + gv, response->body);
    }
    boost::system::error_code ec;
    json::value doc = json::parse(response->body, ec);
    std::set<std::string> served;
    if (!ec && doc.is_object()) {
      if (const json::value* list = doc.get_object().if_contains("resources");
          list && list->is_array()) {
        for (const json::value& item : list->get_array()) {
          if (!item.is_object()) continue;
          if (const json::value* n = item.get_object().if_contains("name"); n && n->is_string()) {
            served.insert(std::string(n->get_string()));
          }
        }
      }
    }
    for (const client::Resource& each : resources) {
      if (each.ApiVersion() != gv || served.contains(each.plural)) continue;
      return absl::NotFoundError(fmt::format(
          "the API server serves {} but not {}: install the CustomResourceDefinitions with "
          "`kubectl apply -k deploy/`",
          gv, Describe(each)));
    }
  }
  for (const client::Resource& r : resources) {
    client::Request request;
    request.method = "GET";
    request.path = r.Path("");
    request.query = {{"limit", "1"}};
    auto response = api.transport().Do(request);
    if (!response.ok()) {
      return absl::UnavailableError(fmt::format("cannot reach the API server: {}",
                                                std::string(response.status().message())));
    }
    if (response->status < 200 || response->status > 299) {
      return FromCode(response->status, "listing " + Describe(r), response->body);
    }
  }
  return absl::OkStatus();
}

int WaitForApi(client::Client& api, const std::vector<client::Resource>& resources,
               const sigset_t& signals, const std::string& command,
               const std::function<void(const std::string&)>& unready,
               std::chrono::milliseconds retry) {
  std::string last;
  while (true) {
    absl::Status s = CheckApi(api, resources);
    if (s.ok()) {
      if (!last.empty()) fmt::print(stderr, "{}: the API server's checks pass now\n", command);
      if (unready) unready("");
      return 0;
    }
    std::string reason(s.message());
    if (reason != last) {
      fmt::print(stderr, "{}: not ready: {}\n", command, reason);
      std::fflush(stderr);
      if (unready) unready(reason);
      last = reason;
    }
    if (int signal = WaitForSignal(signals, retry); signal != 0) return signal;
  }
}

}  // namespace muster::cmd
