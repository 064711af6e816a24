#pragma once

// How a process pod gets names of its own on a machine whose network it shares: its containers
// start in private mount and UTS namespaces where the pod's hosts file (pod_network.h) is
// bind-mounted on /etc/hosts and the host name is the pod's, as a container runtime gives a
// pod its /etc/hosts and hostname. Nothing is left behind: a namespace ends with its last
// process, and the bind mount with it.
//
//   kMountNamespace  the agent may mount (root, CAP_SYS_ADMIN): unshare(CLONE_NEWNS |
//                    CLONE_NEWUTS), mounts made private so that nothing reaches the machine's.
//   kUserNamespace   otherwise, where unprivileged user namespaces are allowed (Debian 12's
//                    default): the same inside a new user namespace in which the agent's user
//                    and group map to themselves, so files and `id` read as outside. Inside,
//                    setuid programs (sudo) do not gain privileges.
//   kNone            neither is allowed (a container without CAP_SYS_ADMIN and with user
//                    namespaces filtered): pods see the machine's /etc/hosts and host name.
//
// Thread-safety: ProbePodIsolation may be called from any thread; EnterPodIsolation only in a
// child between fork and execve.

#include <sys/types.h>

#include <string>
#include <string_view>

namespace muster::node {

enum class PodIsolation { kNone, kMountNamespace, kUserNamespace };

// "none", "mount namespace", "user namespace".
std::string_view PodIsolationName(PodIsolation isolation);

// Whether this process can give its pods `isolation`, found by trying it (mounting /etc/hosts
// on itself) in a short-lived child process.
bool CanIsolatePods(PodIsolation isolation);

// The first of kMountNamespace and kUserNamespace this process can give its pods, else kNone.
// The first call decides; later calls return the same.
PodIsolation ProbePodIsolation();

// Everything EnterPodIsolation needs, prepared before fork (the child may not allocate).
struct PodIsolationPlan {
  PodIsolation isolation = PodIsolation::kNone;
  std::string hosts_file;  // bind-mounted on /etc/hosts
  std::string hostname;    // at most 64 bytes
  std::string uid_map;     // kUserNamespace: "<uid> <uid> 1"
  std::string gid_map;     // kUserNamespace: "<gid> <gid> 1"

  static PodIsolationPlan For(PodIsolation isolation, std::string hosts_file,
                              std::string hostname);
};

// In the forked child: enters the namespaces and mounts. Async-signal-safe. Returns 0, or the
// errno of the step that failed with *failed_step naming it ("unshare", "mount /etc/hosts", ...).
int EnterPodIsolation(const PodIsolationPlan& plan, const char** failed_step);

}  // namespace muster::node
