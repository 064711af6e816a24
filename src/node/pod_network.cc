#include "node/pod_network.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/hash.h"
#include "node/json_access.h"

namespace muster::node {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr char kClusterDomain[] = "svc.cluster.local";
constexpr size_t kMaxHostnameLength = 63;  // a DNS label
constexpr uint64_t kAddressCount = 254ULL * 256 * 254;

// Kubernetes' truncateHostname: at most 63 characters, without a trailing '-' or '.'.
std::string PodHostnameOf(const json::object& pod) {
  const json::object* spec = ObjectAt(pod, "spec");
  std::string hostname = spec == nullptr ? "" : StringAt(*spec, "hostname");
  if (hostname.empty()) hostname = MetaString(pod, "name");
  if (hostname.size() > kMaxHostnameLength) {
    hostname.resize(kMaxHostnameLength);
    while (!hostname.empty() && (hostname.back() == '-' || hostname.back() == '.')) {
      hostname.pop_back();
    }
  }
  return hostname;
}

std::map<std::string, std::string> LabelMap(const json::object* o) {
  std::map<std::string, std::string> out;
  if (o == nullptr) return out;
  for (const auto& [k, v] : *o) {
    if (v.is_string()) out.emplace(std::string(k), std::string(v.get_string()));
  }
  return out;
}

std::string AddressAt(uint64_t index) {
  index %= kAddressCount;
  return Cat("127.", 1 + index % 254, ".", (index / 254) % 256, ".", 1 + index / (254 * 256));
}

// Whether `address` is one AddressAt can make.
bool IsPodAddress(const std::string& address) {
  std::vector<std::string> parts = absl::StrSplit(address, '.');
  if (parts.size() != 4 || parts[0] != "127") return false;
  int octets[3];
  for (int i = 0; i < 3; ++i) {
    if (!absl::SimpleAtoi(parts[i + 1], &octets[i]) || octets[i] < 0 || octets[i] > 255) {
      return false;
    }
  }
  return octets[0] >= 1 && octets[0] <= 254 && octets[2] >= 1 && octets[2] <= 254;
}

bool Selects(const HeadlessService& service, const NetworkPod& pod) {
  if (service.ns != pod.ns || service.selector.empty()) return false;
  for (const auto& [k, v] : service.selector) {
    auto it = pod.labels.find(k);
    if (it == pod.labels.end() || it->second != v) return false;
  }
  return true;
}

// The names of "<base>" in namespace `ns` as seen from namespace `from`: base.ns.svc.cluster.local,
// base.ns.svc, base.ns, and base itself from the same namespace.
std::vector<std::string> ClusterNames(const std::string& base, const std::string& ns,
                                      const std::string& from) {
  std::vector<std::string> names = {Cat(base, ".", ns, ".", kClusterDomain),
                                    Cat(base, ".", ns, ".svc"), Cat(base, ".", ns)};
  if (ns == from) names.push_back(base);
  return names;
}

// Replaces the file's bytes in place: a bind mount of it sees the new text.
bool WriteInPlace(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
            ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
  ok = ::close(fd) == 0 && ok;
  return ok;
}

}  // namespace

std::vector<HostEntry> PodHostEntries(const NetworkPod& self, const std::vector<NetworkPod>& pods,
                                      const std::vector<HeadlessService>& services) {
  std::vector<HostEntry> entries;
  if (self.subdomain.empty()) {
    entries.push_back({self.ip, {self.hostname}});
  } else {
    entries.push_back(
        {self.ip,
         {Cat(self.hostname, ".", self.subdomain, ".", self.ns, ".", kClusterDomain),
          self.hostname}});
  }
  std::vector<const NetworkPod*> sorted;
  for (const NetworkPod& p : pods) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const NetworkPod* a, const NetworkPod* b) {
    return std::tie(a->ns, a->name, a->uid) < std::tie(b->ns, b->name, b->uid);
  });
  for (const NetworkPod* p : sorted) {
    if (p->subdomain.empty()) continue;
    std::vector<std::string> names =
        ClusterNames(Cat(p->hostname, ".", p->subdomain), p->ns, self.ns);
    entries.push_back({p->ip, std::move(names)});
  }
  std::vector<const HeadlessService*> by_name;
  for (const HeadlessService& s : services) by_name.push_back(&s);
  std::sort(by_name.begin(), by_name.end(), [](const HeadlessService* a, const HeadlessService* b) {
    return std::tie(a->ns, a->name) < std::tie(b->ns, b->name);
  });
  for (const HeadlessService* s : by_name) {
    for (const NetworkPod* p : sorted) {
      if (Selects(*s, *p)) entries.push_back({p->ip, ClusterNames(s->name, s->ns, self.ns)});
    }
  }
  return entries;
}

std::string HostsFileText(std::string_view machine_hosts, const std::vector<HostEntry>& entries) {
  std::string text(machine_hosts);
  if (!text.empty() && text.back() != '\n') text += '\n';
  text +=
      "# muster: this pod's own names, then the pods and headless Services of the process nodes\n";
  for (const HostEntry& e : entries) text += Cat(e.ip, "\t", absl::StrJoin(e.names, "\t"), "\n");
  return text;
}

PodNetwork::PodNetwork(Options options) : options_(std::move(options)) {
  std::ifstream in(options_.machine_hosts_path);
  std::stringstream text;
  text << in.rdbuf();
  machine_hosts_ = in ? text.str() : "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n";
}

std::string PodNetwork::HostsFilePath(std::string_view ns, std::string_view name) const {
  return (fs::path(options_.data_dir) / "pods" / std::string(ns) / std::string(name) / "etc-hosts")
      .string();
}

std::string PodNetwork::NewAddressLocked(const std::string& uid) const {
  const uint64_t start = common::Fnv1a64(uid) % kAddressCount;
  for (uint64_t i = 0; i < kAddressCount; ++i) {
    std::string address = AddressAt(start + i);
    if (!taken_.contains(address)) return address;
  }
  return "127.0.0.1";  // sixteen million pods: unreachable
}

std::string PodNetwork::Publish(const json::object& pod, std::string_view address_before) {
  NetworkPod p;
  p.uid = MetaString(pod, "uid");
  p.ns = MetaString(pod, "namespace");
  p.name = MetaString(pod, "name");
  p.hostname = PodHostnameOf(pod);
  const json::object* spec = ObjectAt(pod, "spec");
  p.subdomain = spec == nullptr ? "" : StringAt(*spec, "subdomain");
  const json::object* meta = ObjectAt(pod, "metadata");
  p.labels = LabelMap(meta == nullptr ? nullptr : ObjectAt(*meta, "labels"));

  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = pods_.find(p.uid); it != pods_.end()) {
    p.ip = it->second.ip;
    if (it->second == p) return p.ip;
    it->second = std::move(p);
    RewriteLocked();
    return it->second.ip;
  }
  const std::string before(address_before);
  p.ip = IsPodAddress(before) && !taken_.contains(before) ? before : NewAddressLocked(p.uid);
  taken_.insert(p.ip);
  std::string ip = p.ip;
  pods_.emplace(p.uid, std::move(p));
  RewriteLocked();
  return ip;
}

void PodNetwork::Withdraw(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  taken_.erase(it->second.ip);
  pods_.erase(it);
  written_.erase(uid);
  RewriteLocked();
}

void PodNetwork::UpsertService(const json::object& service) {
  const std::string key = Cat(MetaString(service, "namespace"), "/", MetaString(service, "name"));
  const json::object* spec = ObjectAt(service, "spec");
  HeadlessService s{MetaString(service, "namespace"), MetaString(service, "name"),
                    LabelMap(spec == nullptr ? nullptr : ObjectAt(*spec, "selector"))};
  const bool headless = spec != nullptr && StringAt(*spec, "clusterIP") == "None";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = services_.find(key);
  if (!headless || s.selector.empty()) {
    if (it == services_.end()) return;
    services_.erase(it);
  } else if (it != services_.end() && it->second.selector == s.selector) {
    return;
  } else {
    services_[key] = std::move(s);
  }
  RewriteLocked();
}

void PodNetwork::RemoveService(const json::object& service) {
  const std::string key = Cat(MetaString(service, "namespace"), "/", MetaString(service, "name"));
  std::lock_guard<std::mutex> lock(mu_);
  if (services_.erase(key) != 0) RewriteLocked();
}

std::vector<HostEntry> PodNetwork::EntriesLocked(const NetworkPod& self) const {
  std::vector<NetworkPod> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, p] : pods_) pods.push_back(p);
  std::vector<HeadlessService> services;
  for (const auto& [key, s] : services_) services.push_back(s);
  return PodHostEntries(self, pods, services);
}

void PodNetwork::RewriteLocked() {
  if (options_.data_dir.empty()) return;
  for (const auto& [uid, p] : pods_) {
    std::string text = HostsFileText(machine_hosts_, EntriesLocked(p));
    std::string& written = written_[uid];
    if (text == written) continue;
    const std::string path = HostsFilePath(p.ns, p.name);
    if (WriteInPlace(path, text)) {
      written = std::move(text);
    } else {
      std::fprintf(stderr, "node agent: writing %s: %s\n", path.c_str(), std::strerror(errno));
    }
  }
}

absl::Status PodNetwork::PrepareLaunch(const std::string& uid, ContainerLaunch& launch) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return absl::OkStatus();
  const NetworkPod& self = it->second;
  if (options_.isolation != PodIsolation::kNone) {
    if (options_.data_dir.empty()) return absl::OkStatus();
    launch.isolation = PodIsolationPlan::For(options_.isolation,
                                             HostsFilePath(self.ns, self.name), self.hostname);
    return absl::OkStatus();
  }
  constexpr std::string_view kMasterAddr = "MASTER_ADDR=";
  for (std::string& entry : launch.env) {
    if (entry.rfind(kMasterAddr, 0) != 0) continue;
    const std::string name = entry.substr(kMasterAddr.size());
    for (const HostEntry& e : EntriesLocked(self)) {
      if (std::find(e.names.begin(), e.names.end(), name) != e.names.end()) {
        entry = Cat(kMasterAddr, e.ip);
        return absl::OkStatus();
      }
    }
    // "<a>.<zone>" or "<a>.<zone>.<ns>[.svc[.cluster.local]]": a zone of ours is a subdomain
    // of a published pod or a headless Service, in the namespace named or the pod's own.
    std::vector<std::string> labels = absl::StrSplit(name, '.');
    if (labels.size() < 2) return absl::OkStatus();
    const std::string zone_ns = labels.size() >= 3 ? labels[2] : self.ns;
    bool ours = services_.contains(Cat(zone_ns, "/", labels[1]));
    for (const auto& [other_uid, p] : pods_) {
      ours = ours || (p.ns == zone_ns && p.subdomain == labels[1]);
    }
    if (ours) {
      return absl::UnavailableError(
          Cat("MASTER_ADDR: no pod has the address of ", name, " yet"));
    }
  }
  return absl::OkStatus();
}

}  // namespace muster::node
