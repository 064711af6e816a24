#include "apiserver/admission/kinds.h"

// Services: pkg/apis/core/v1/defaults.go (SetDefaults_Service: type ClusterIP, sessionAffinity
// None, port protocol TCP, targetPort the port, the traffic policies), the allocation
// pkg/registry/core/service does on create (one IPv4 cluster IP from the service range
// 10.96.0.0/12, clusterIPs, ipFamilies and ipFamilyPolicy with it; a node port from 30000-32767
// for each port of a NodePort or LoadBalancer Service), what it keeps on update when the new
// object leaves them out (patchAllocatedValues: `kubectl apply` of a file without them), and the
// checks of pkg/apis/core/validation (ValidateService, ValidateServiceUpdate) that users meet
// first. muster allocates addresses so that Services read as on a cluster; nothing routes to them.
// An address is chosen from a hash of the Service's namespace and name, the first free one from
// there, so that the same objects get the same addresses.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "common/hash.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kServicesResource[] = "services";
constexpr uint32_t kServiceRangeBase = (10u << 24) | (96u << 16);  // 10.96.0.0
constexpr uint32_t kServiceRangeSize = 1u << 20;                    // /12
constexpr int64_t kNodePortFirst = 30000;
constexpr int64_t kNodePortCount = 2768;  // 30000-32767

std::string FormatIpv4(uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

bool IsIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (i <= s.size()) {
    size_t dot = s.find('.', i);
    if (dot == std::string_view::npos) dot = s.size();
    std::string_view part = s.substr(i, dot - i);
    if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    int v = 0;
    for (char ch : part) {
      if (ch < '0' || ch > '9') return false;
      v = v * 10 + (ch - '0');
    }
    if (v > 255) return false;
    ++parts;
    i = dot + 1;
  }
  return parts == 4;
}

// The cluster IPs and node ports other Services hold.
struct Taken {
  std::set<std::string> ips;
  std::set<int64_t> node_ports;
};

Taken TakenByOthers(const Context& c) {
  Taken taken;
  for (const json::object& svc : ListObjects(c.req.store, kServicesResource)) {
    if (NestedString(svc, "metadata", "namespace") == c.ns &&
        NestedString(svc, "metadata", "name") == c.name) {
      continue;
    }
    const json::object* spec = FindObject(svc, "spec");
    if (spec == nullptr) continue;
    if (std::string ip = StringAt(*spec, "clusterIP"); !ip.empty()) taken.ips.insert(ip);
    if (const json::value* ports = spec->if_contains("ports"); ports && ports->is_array()) {
      for (const json::value& p : ports->get_array()) {
        if (!p.is_object()) continue;
        if (const json::value* np = p.get_object().if_contains("nodePort")) {
          if (std::optional<int64_t> n = AsInt(*np)) taken.node_ports.insert(*n);
        }
      }
    }
  }
  return taken;
}

std::string AllocateClusterIp(const Context& c, const Taken& taken) {
  const uint64_t start = common::Fnv1a64(c.ns + "/" + c.name);
  // The range's first address is the `kubernetes` Service's, its last the broadcast address.
  const uint32_t usable = kServiceRangeSize - 3;
  for (uint32_t i = 0; i < usable; ++i) {
    const uint32_t offset = 2 + static_cast<uint32_t>((start + i) % usable);
    std::string ip = FormatIpv4(kServiceRangeBase + offset);
    if (!taken.ips.contains(ip)) return ip;
  }
  return "";
}

int64_t AllocateNodePort(const Context& c, int64_t port, const std::set<int64_t>& taken) {
  const uint64_t start = common::Fnv1a64(fmt::format("{}/{}:{}", c.ns, c.name, port));
  for (int64_t i = 0; i < kNodePortCount; ++i) {
    const int64_t candidate =
        kNodePortFirst + static_cast<int64_t>((start + static_cast<uint64_t>(i)) % kNodePortCount);
    if (!taken.contains(candidate)) return candidate;
  }
  return 0;
}

const json::object* OldSpec(const Context& c) {
  return c.create() ? nullptr : FindObject(*c.req.old, "spec");
}

}  // namespace

std::optional<ApiError> AdmitService(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // services/status
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1.ServiceSpec");
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (spec == nullptr) spec = &c.obj["spec"].emplace_object();
  const json::object* old = OldSpec(c);

  // --- Defaults (SetDefaults_Service) ---------------------------------------------------------
  // (A member added to `spec` may move the others: pointers into it are taken after.)
  DefaultString(*spec, "type", "ClusterIP");
  DefaultString(*spec, "sessionAffinity", "None");
  const std::string type = c.reader.StrOr(*spec, "type", "spec.type");
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (type != "ExternalName") DefaultString(*spec, "internalTrafficPolicy", "Cluster");
  if (type == "NodePort" || type == "LoadBalancer") {
    DefaultString(*spec, "externalTrafficPolicy", "Cluster");
  }
  if (type == "LoadBalancer" && IsAbsent(spec->if_contains("allocateLoadBalancerNodePorts"))) {
    (*spec)["allocateLoadBalancerNodePorts"] = true;
  }
  json::array* ports = c.reader.Arr(*spec, "ports", "spec.ports", "[]v1.ServicePort");
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;

  // --- Checks (ValidateService) ---------------------------------------------------------------
  if (type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer" &&
      type != "ExternalName") {
    c.errs.NotSupported("spec.type", type,
                        {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"});
  }
  std::string cluster_ip = c.reader.StrOr(*spec, "clusterIP", "spec.clusterIP");
  if (type == "ExternalName") {
    if (c.reader.StrOr(*spec, "externalName", "spec.externalName").empty()) {
      c.errs.Required("spec.externalName");
    }
  } else if (cluster_ip != "None" && (ports == nullptr || ports->empty())) {
    c.errs.Required("spec.ports");
  }
  if (!cluster_ip.empty() && cluster_ip != "None" && !IsIpv4(cluster_ip)) {
    c.errs.InvalidString("spec.clusterIPs[0]", cluster_ip,
                         "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
  }
  if (ports != nullptr) {
    for (size_t i = 0; i < ports->size(); ++i) {
      const std::string path = fmt::format("spec.ports[{}]", i);
      json::object* port = (*ports)[i].if_object();
      if (port == nullptr) continue;
      DefaultString(*port, "protocol", "TCP");
      const std::optional<int64_t> number = c.reader.Int(*port, "port", path + ".port");
      const std::string protocol = c.reader.StrOr(*port, "protocol", path + ".protocol");
      if (number && (*number < 1 || *number > 65535)) {
        c.errs.Invalid(path + ".port", std::to_string(*number),
                       "must be between 1 and 65535, inclusive");
      }
      if (!number && IsAbsent(port->if_contains("port"))) c.errs.Required(path + ".port");
      if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
        c.errs.NotSupported(path + ".protocol", protocol, {"SCTP", "TCP", "UDP"});
      }
      if (number && IsAbsent(port->if_contains("targetPort"))) (*port)["targetPort"] = *number;
    }
  }
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (!c.errs.empty()) return std::nullopt;

  // --- What an update leaves out is kept; a cluster IP once set stays (ValidateServiceUpdate) --
  if (old != nullptr) {
    const std::string old_ip = StringAt(*old, "clusterIP");
    if (cluster_ip.empty() && !old_ip.empty() && type != "ExternalName") {
      cluster_ip = old_ip;
      for (const char* key : {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"}) {
        if (const json::value* v = old->if_contains(key)) (*spec)[key] = *v;
      }
    } else if (!cluster_ip.empty() && !old_ip.empty() && cluster_ip != old_ip &&
               StringAt(*old, "type") != "ExternalName" && type != "ExternalName") {
      c.errs.InvalidString("spec.clusterIPs[0]", cluster_ip, "may not change once set");
      return std::nullopt;
    }
  }

  // --- Allocation ------------------------------------------------------------------------------
  if (type == "ExternalName") return std::nullopt;
  Taken taken;
  const bool needs_ip = cluster_ip.empty();
  const bool needs_ports = type == "NodePort" || type == "LoadBalancer";
  if (needs_ip || needs_ports || (c.create() && cluster_ip != "None")) taken = TakenByOthers(c);
  if (needs_ip) {
    cluster_ip = AllocateClusterIp(c, taken);
    if (cluster_ip.empty()) {
      c.errs.Invalid("spec.clusterIPs", "[]string(nil)", "failed to allocate IP: range is full");
      return std::nullopt;
    }
    (*spec)["clusterIP"] = cluster_ip;
  } else if (cluster_ip != "None" && taken.ips.contains(cluster_ip) && c.create()) {
    c.errs.InvalidString("spec.clusterIPs", cluster_ip,
                         fmt::format("failed to allocate IP {}: provided IP is already allocated",
                                     cluster_ip));
    return std::nullopt;
  }
  if (IsAbsent(spec->if_contains("clusterIPs"))) (*spec)["clusterIPs"] = json::array{cluster_ip};
  if (IsAbsent(spec->if_contains("ipFamilies"))) (*spec)["ipFamilies"] = json::array{"IPv4"};
  DefaultString(*spec, "ipFamilyPolicy", "SingleStack");
  ports = spec->contains("ports") ? spec->at("ports").if_array() : nullptr;  // moved by the above
  if (needs_ports && ports != nullptr) {
    const json::value* old_ports = old == nullptr ? nullptr : old->if_contains("ports");
    for (json::value& p : *ports) {
      json::object* port = p.if_object();
      // 0 asks for one, as absent does (what `kubectl create service nodeport` sends).
      if (port == nullptr) continue;
      const json::value* given = port->if_contains("nodePort");
      if (!IsAbsent(given) && AsInt(*given).value_or(0) != 0) continue;
      port->erase("nodePort");
      const int64_t number = AsInt(port->contains("port") ? port->at("port") : json::value())
                                 .value_or(0);
      // An update keeps the node port the same port number and protocol had.
      if (old_ports != nullptr && old_ports->is_array()) {
        for (const json::value& o : old_ports->get_array()) {
          if (!o.is_object()) continue;
          const json::object& op = o.get_object();
          if (AsInt(op.contains("port") ? op.at("port") : json::value()) == number &&
              StringAt(op, "protocol") == StringAt(*port, "protocol") && op.contains("nodePort")) {
            (*port)["nodePort"] = op.at("nodePort");
          }
        }
      }
      if (port->contains("nodePort")) continue;
      const int64_t node_port = AllocateNodePort(c, number, taken.node_ports);
      if (node_port == 0) continue;
      taken.node_ports.insert(node_port);
      (*port)["nodePort"] = node_port;
    }
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
