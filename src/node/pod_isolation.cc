#include "node/pod_isolation.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "node/json_access.h"  // Cat

namespace muster::node {

namespace {

// Writes `text` to a /proc file of this process; 0 or errno.
int WriteProcFile(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = n == static_cast<ssize_t>(text.size()) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

}  // namespace

bool CanIsolatePods(PodIsolation isolation) {
  if (isolation == PodIsolation::kNone) return true;
  char hostname[HOST_NAME_MAX + 1] = {};
  if (::gethostname(hostname, sizeof(hostname) - 1) != 0) return false;
  const PodIsolationPlan plan = PodIsolationPlan::For(isolation, "/etc/hosts", hostname);
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const char* step = nullptr;
    ::_exit(EnterPodIsolation(plan, &step) == 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string_view PodIsolationName(PodIsolation isolation) {
  switch (isolation) {
    case PodIsolation::kMountNamespace:
      return "mount namespace";
    case PodIsolation::kUserNamespace:
      return "user namespace";
    case PodIsolation::kNone:
      break;
  }
  return "none";
}

PodIsolation ProbePodIsolation() {
  static const PodIsolation found = [] {
    for (PodIsolation isolation : {PodIsolation::kMountNamespace, PodIsolation::kUserNamespace}) {
      if (CanIsolatePods(isolation)) return isolation;
    }
    return PodIsolation::kNone;
  }();
  return found;
}

PodIsolationPlan PodIsolationPlan::For(PodIsolation isolation, std::string hosts_file,
                                       std::string hostname) {
  PodIsolationPlan plan;
  plan.isolation = isolation;
  plan.hosts_file = std::move(hosts_file);
  plan.hostname = std::move(hostname);
  if (plan.hostname.size() > HOST_NAME_MAX) plan.hostname.resize(HOST_NAME_MAX);
  plan.uid_map = Cat(::geteuid(), " ", ::geteuid(), " 1");
  plan.gid_map = Cat(::getegid(), " ", ::getegid(), " 1");
  return plan;
}

int EnterPodIsolation(const PodIsolationPlan& plan, const char** failed_step) {
  auto failed = [failed_step](const char* step) {
    const int err = errno != 0 ? errno : EINVAL;
    *failed_step = step;
    return err;
  };
  if (plan.isolation == PodIsolation::kNone) return 0;
  if (plan.isolation == PodIsolation::kUserNamespace) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWUTS) != 0) {
      return failed("unshare user, mount and UTS namespaces");
    }
    // Mapping one's own ids needs setgroups denied first (user_namespaces(7)).
    if (int err = WriteProcFile("/proc/self/setgroups", "deny"); err != 0 && err != ENOENT) {
      *failed_step = "write /proc/self/setgroups";
      return err;
    }
    if (int err = WriteProcFile("/proc/self/uid_map", plan.uid_map); err != 0) {
      *failed_step = "write /proc/self/uid_map";
      return err;
    }
    if (int err = WriteProcFile("/proc/self/gid_map", plan.gid_map); err != 0) {
      *failed_step = "write /proc/self/gid_map";
      return err;
    }
  } else if (::unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) {
    return failed("unshare mount and UTS namespaces");
  }
  // Private first: a bind mount must not propagate to the machine's mount namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return failed("make mounts private");
  }
  if (::mount(plan.hosts_file.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
    return failed("bind-mount the pod's hosts file on /etc/hosts");
  }
  if (!plan.hostname.empty() &&
      ::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) {
    return failed("set the pod's host name");
  }
  return 0;
}

}  // namespace muster::node
