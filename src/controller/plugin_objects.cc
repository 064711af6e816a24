#include "controller/plugin_objects.h"

#include <utility>

#include "absl/status/statusor.h"
#include "api/json_access.h"
#include "boost/json/value.hpp"

namespace muster::controller {

namespace json = boost::json;

const client::Resource& PluginObjectResource(std::string_view plural) {
  static const auto* const config_maps =
      new client::Resource{"", "v1", "configmaps", "ConfigMap", true};
  static const auto* const secrets = new client::Resource{"", "v1", "secrets", "Secret", true};
  if (plural == "services") return client::Services();
  return plural == "secrets" ? *secrets : *config_maps;
}

absl::Status CreateOrUpdatePluginObject(client::Client& client, const PluginObject& object,
                                        const std::string& ns, bool job_added) {
  const client::Resource& resource = PluginObjectResource(object.resource);
  const bool is_config_map = object.resource == "configmaps";
  if (!is_config_map && !job_added) return absl::OkStatus();
  const std::string name = api::MetaString(object.object, "name");
  absl::StatusOr<json::object> existing = client.Get(resource, ns, name);
  if (absl::IsNotFound(existing.status())) {
    json::object made = object.object;
    if (object.complete_on_create) {
      if (absl::Status s = object.complete_on_create(made); !s.ok()) return s;
    }
    absl::StatusOr<json::object> created = client.Create(resource, ns, std::move(made));
    if (created.ok() || absl::IsAlreadyExists(created.status())) return absl::OkStatus();
    return created.status();
  }
  if (!existing.ok()) return existing.status();
  if (!is_config_map) return absl::OkStatus();
  const json::value* have = existing->if_contains("data");
  const json::value* want = object.object.if_contains("data");
  if (have != nullptr && want != nullptr && *have == *want) return absl::OkStatus();
  json::object updated = *existing;
  updated["data"] = want != nullptr ? *want : json::value(json::object());
  return client.Update(resource, std::move(updated)).status();
}

absl::Status DeletePluginObject(client::Client& client, const PluginObject& object,
                                const std::string& ns) {
  absl::Status s = client.Delete(PluginObjectResource(object.resource), ns,
                                 api::MetaString(object.object, "name"));
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

}  // namespace muster::controller
