#pragma once

// PodNetwork: addresses and names for the pods of process nodes, which all share this machine's
// network. Each pod gets an address of its own on the loopback interface as status.podIP (Linux
// routes the whole of 127.0.0.0/8 there, so binding 127.a.b.c needs no set-up and reaches
// nothing beyond this machine), and a hosts file listing the names cluster DNS would answer;
// pod_isolation.h makes that file the pod's /etc/hosts.
//
// Addresses: 127.a.b.c with a and c in 1..254, drawn from a stable hash of the pod's uid (so two
// agents on one machine are unlikely to hand out the same one), the next free one on a
// collision. The address a pod already had (a restart of the agent) is kept when it is such an
// address and free.
//
// Names, for a published pod with hostname H (spec.hostname, else its name cut to 63
// characters) and subdomain S (spec.subdomain) in namespace N:
//   - its own line, as the kubelet writes it: "<ip> H.S.N.svc.cluster.local H" ("<ip> H"
//     without a subdomain);
//   - for every published pod with a subdomain: H.S.N.svc.cluster.local, H.S.N.svc, H.S.N, and
//     from pods of the same namespace H.S (the short forms a pod's DNS search list completes).
//     Cluster DNS answers these only while a headless Service named S selects the pod; here the
//     subdomain alone publishes them;
//   - for every headless Service (clusterIP None) X of namespace N with a selector, for each
//     published pod it selects: X.N.svc.cluster.local, X.N.svc, X.N, and X from pods of N.
// The machine's /etc/hosts comes first in every file, so that its names keep resolving.
//
// A pod is published from its first sync until it ends or goes (Withdraw); its file is
// <data_dir>/pods/<ns>/<pod>/etc-hosts, rewritten in place whenever what it lists changes (a
// bind mount pins the file, not its name), and removed with the pod's directory.
//
// Without pod namespaces (PodIsolation::kNone) processes resolve with the machine's /etc/hosts:
// then a container's MASTER_ADDR (the pytorch plugin's) that names a published pod or Service is
// rewritten to its address, and one that names a pod of a subdomain or Service in use here but not
// published yet keeps the container waiting (Unavailable) until it is.
//
// Thread-safety: every method may be called from any thread.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "boost/json/object.hpp"
#include "node/pod_isolation.h"
#include "node/runtime.h"

namespace muster::node {

// A published pod, as the hosts files need it.
struct NetworkPod {
  std::string uid, ns, name;
  std::string hostname;  // spec.hostname, else the name cut to 63 characters
  std::string subdomain;
  std::string ip;
  std::map<std::string, std::string> labels;

  bool operator==(const NetworkPod&) const = default;
};

// A headless Service with a selector.
struct HeadlessService {
  std::string ns, name;
  std::map<std::string, std::string> selector;
};

// One line of a hosts file: an address and its names.
struct HostEntry {
  std::string ip;
  std::vector<std::string> names;
};

// The lines `self` sees, its own first (see above), pods and Services in namespace and name
// order. Pure.
std::vector<HostEntry> PodHostEntries(const NetworkPod& self, const std::vector<NetworkPod>& pods,
                                      const std::vector<HeadlessService>& services);

// A hosts file: `machine_hosts`, then the entries, tab-separated.
std::string HostsFileText(std::string_view machine_hosts, const std::vector<HostEntry>& entries);

class PodNetwork {
 public:
  struct Options {
    std::string data_dir;  // hosts files under <data_dir>/pods
    PodIsolation isolation = PodIsolation::kNone;
    std::string machine_hosts_path = "/etc/hosts";  // read once, at construction
  };
  explicit PodNetwork(Options options);

  PodNetwork(const PodNetwork&) = delete;
  PodNetwork& operator=(const PodNetwork&) = delete;

  // Publishes the pod (address, names, labels), or brings what is published up to date, and
  // returns its address: `address_before` when it is one of this network's and free, else a new
  // one. Rewrites the hosts files whose lines changed. Idempotent.
  std::string Publish(const boost::json::object& pod, std::string_view address_before);
  // Withdraws the pod's names and frees its address (it ended or is gone); its file is no longer
  // written. Idempotent.
  void Withdraw(const std::string& uid);

  // A Service as the API has it now; only headless ones with a selector count.
  void UpsertService(const boost::json::object& service);
  void RemoveService(const boost::json::object& service);

  // Readies the launch of one of a published pod's containers: the pod's namespaces, hosts file
  // and host name; without namespaces, MASTER_ADDR rewritten as said above (Unavailable while it
  // has to wait). A pod not published is left as it is.
  absl::Status PrepareLaunch(const std::string& uid, ContainerLaunch& launch) const;

  [[nodiscard]] PodIsolation isolation() const { return options_.isolation; }
  [[nodiscard]] std::string HostsFilePath(std::string_view ns, std::string_view name) const;

 private:
  std::string NewAddressLocked(const std::string& uid) const;
  std::vector<HostEntry> EntriesLocked(const NetworkPod& self) const;
  // Rewrites every published pod's file whose text changed.
  void RewriteLocked();

  const Options options_;
  std::string machine_hosts_;
  mutable std::mutex mu_;
  std::map<std::string, NetworkPod> pods_;           // by uid
  std::set<std::string> taken_;                       // addresses of pods_
  std::map<std::string, HeadlessService> services_;  // by "ns/name"
  std::map<std::string, std::string> written_;        // uid -> the text its file has
};

}  // namespace muster::node
