#include "api/conditions.h"

#include <utility>

#include "api/json_access.h"

namespace muster::api {

namespace json = boost::json;

const json::object* FindCondition(const json::array& conditions, std::string_view type) {
  for (const json::value& c : conditions) {
    const json::object* o = c.if_object();
    if (o != nullptr && StringViewAt(o, "type") == type) return o;
  }
  return nullptr;
}

bool SetStatusCondition(json::array& conditions, const MetaCondition& condition,
                        std::string_view now) {
  for (json::value& c : conditions) {
    json::object* o = c.if_object();
    if (o == nullptr || StringViewAt(o, "type") != condition.type) continue;
    bool changed = false;
    auto set = [&](std::string_view key, json::value v) {
      const json::value* old = o->if_contains(key);
      if (old != nullptr && *old == v) return;
      (*o)[key] = std::move(v);
      changed = true;
    };
    if (StringViewAt(o, "status") != condition.status) {
      set("status", json::string(condition.status));
      set("lastTransitionTime", json::string(now));
    }
    set("reason", json::string(condition.reason));
    set("message", json::string(condition.message));
    set("observedGeneration", condition.observed_generation);
    return changed;
  }
  json::object o;
  o["type"] = condition.type;
  o["status"] = condition.status;
  o["observedGeneration"] = condition.observed_generation;
  o["lastTransitionTime"] = now;
  o["reason"] = condition.reason;
  o["message"] = condition.message;
  conditions.push_back(std::move(o));
  return true;
}

bool SetPodCondition(json::object& status, std::string_view type, std::string_view value,
                     std::string_view reason, std::string_view message, std::string_view now) {
  json::value& list = status["conditions"];
  if (!list.is_array()) list.emplace_array();
  for (json::value& c : list.get_array()) {
    json::object* o = c.if_object();
    if (o == nullptr || StringViewAt(o, "type") != type) continue;
    if (StringViewAt(o, "status") == value && StringViewAt(o, "reason") == reason &&
        StringViewAt(o, "message") == message) {
      return false;
    }
    if (StringViewAt(o, "status") != value) (*o)["lastTransitionTime"] = now;
    (*o)["status"] = value;
    (*o)["reason"] = reason;
    (*o)["message"] = message;
    return true;
  }
  list.get_array().push_back(json::object{{"type", type},
                                          {"status", value},
                                          {"lastProbeTime", nullptr},
                                          {"lastTransitionTime", now},
                                          {"reason", reason},
                                          {"message", message}});
  return true;
}

bool IsPodReady(const json::object& pod) {
  const json::object* status = ObjectAt(pod, "status");
  const json::array* conditions = status == nullptr ? nullptr : ArrayAt(*status, "conditions");
  if (conditions == nullptr) return false;
  const json::object* ready = FindCondition(*conditions, "Ready");
  return ready != nullptr && StringViewAt(ready, "status") == "True";
}

}  // namespace muster::api
