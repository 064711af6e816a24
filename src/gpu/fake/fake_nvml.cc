// A fake NVML: a shared library named libnvidia-ml.so.1 that implements the entry points muster
// resolves (gpu/nvml_api.h) over a machine described in a text file, so that discovery, health
// and the device plugin run through the same dlopen code on machines without GPUs.
//
// MUSTER_FAKE_NVML_CONFIG names the machine file (read again by an nvmlInit_v2 after the last
// nvmlShutdown; NVML counts init and shutdown calls); without it
// nvmlInit_v2 answers DRIVER_NOT_LOADED, as on a machine without the driver. One directive a line,
// `#` starts a comment, values with spaces in double quotes:
//
//   driver 550.107.02                 nvmlSystemGetDriverVersion
//   cuda 12040                        nvmlSystemGetCudaDriverVersion_v2
//   init_error 9                      nvmlInit_v2 fails with this NVML error
//   gpu name="NVIDIA H100 80GB HBM3" memory_mib=81559 cc=9.0 [uuid=GPU-...] [bus=0000:18:00.0]
//       [minor=N] [socket=S] [switch=W] [mig=on|off|unsupported] [events=unsupported|denied]
//                                     one GPU; indices in order of appearance. The PCIe level
//                                     between two GPUs is PIX on the same switch, NODE on the
//                                     same socket, SYS otherwise (default socket 0, own switch)
//   topology gpu=0 peer=1 level=PHB   overrides the level (both ways): SAME-BOARD, PIX, PXB,
//                                     PHB, NODE, SYS
//   nvlink gpu=0 peer=1 links=4       active NVLinks between two GPUs (both ways)
//   nvswitch gpu=0 links=18           active NVLinks to an NVSwitch (a bus id of no GPU)
//   mig gpu=0 gi=1 ci=0 gi_slices=1 ci_slices=1 memory_mib=9856 sms=16 [profile_id=0]
//       [uuid=MIG-...] [copy=1] [decoders=1] [encoders=0] [jpeg=1] [ofa=0]
//                                     one MIG device of a GPU with mig=on, slots in order
//
// Events: the file MUSTER_FAKE_NVML_EVENTS (default: the machine file's path + ".events") is
// read for new lines at every call; tests append to it:
//   xid <gpu> <xid> [<gi> <ci>]       an XidCriticalError event for the event sets of that GPU
//   lost <gpu>                        the GPU (and its MIG devices) answer GPU_IS_LOST
//   recover <gpu>                     ... and answer normally again
// Lines written before nvmlInit_v2 keep their lost/recover effect; their XIDs are history and
// are not delivered.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/nvml_api.h"

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

struct nvmlDevice_st {
  int gpu = 0;
  int mig = -1;  // slot of a MIG device, -1 for the GPU itself
};

struct nvmlGpuInstance_st {
  int gpu = 0;
  unsigned id = 0;
};

namespace {

struct FakeMig {
  unsigned gi = 0;
  unsigned ci = 0;
  unsigned gi_slices = 1;
  unsigned ci_slices = 1;
  unsigned long long memory_mib = 0;
  unsigned sms = 0;
  unsigned profile_id = 0;
  unsigned copy = 1, decoders = 0, encoders = 0, jpeg = 0, ofa = 0;
  std::string uuid;
  std::unique_ptr<nvmlDevice_st> handle;
  std::unique_ptr<nvmlGpuInstance_st> instance;
};

struct FakeGpu {
  std::string name;
  std::string uuid;
  unsigned long long memory_mib = 0;
  int cc_major = 0, cc_minor = 0;
  unsigned domain = 0, bus = 0, device = 0;
  unsigned minor = 0;
  int socket = 0;
  int pcie_switch = -1;
  std::string mig = "off";
  bool events_supported = true;
  bool events_denied = false;  // RegisterEvents answers NO_PERMISSION
  bool lost = false;
  std::vector<FakeMig> migs;
  std::vector<std::pair<int, unsigned>> links;  // (peer or -1 for an NVSwitch) per link
  std::unique_ptr<nvmlDevice_st> handle;
};

struct Event {
  int gpu;
  unsigned long long xid;
  unsigned gi, ci;
};

struct FakeEventSet {
  unsigned long long mask_by_gpu[64] = {};
  std::vector<Event> pending;
};

struct Machine {
  bool initialised = false;
  int init_count = 0;  // nvmlInit_v2 calls not yet matched by nvmlShutdown, as NVML counts them
  int init_error = 0;
  std::string driver = "550.107.02";
  int cuda = 12040;
  std::vector<FakeGpu> gpus;
  std::map<std::pair<int, int>, nvmlGpuTopologyLevel_t> levels;
  std::string events_path;
  std::streamoff events_offset = 0;
  std::vector<std::unique_ptr<FakeEventSet>> sets;
};

std::mutex mu;
Machine machine;

// key=value tokens; values may be double-quoted.
std::map<std::string, std::string> Fields(std::istringstream& in, std::string& error) {
  std::map<std::string, std::string> fields;
  std::string rest;
  std::getline(in, rest);
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
    if (i >= rest.size()) break;
    size_t eq = rest.find('=', i);
    if (eq == std::string::npos) {
      error = "expected key=value at \"" + rest.substr(i) + "\"";
      return fields;
    }
    std::string key = rest.substr(i, eq - i);
    std::string value;
    i = eq + 1;
    if (i < rest.size() && rest[i] == '"') {
      size_t close = rest.find('"', i + 1);
      if (close == std::string::npos) {
        error = "unterminated quote";
        return fields;
      }
      value = rest.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      size_t end = rest.find_first_of(" \t", i);
      if (end == std::string::npos) end = rest.size();
      value = rest.substr(i, end - i);
      i = end;
    }
    fields[key] = value;
  }
  return fields;
}

nvmlGpuTopologyLevel_t ParseLevel(const std::string& name, bool& ok) {
  ok = true;
  if (name == "SAME-BOARD") return NVML_TOPOLOGY_INTERNAL;
  if (name == "PIX") return NVML_TOPOLOGY_SINGLE;
  if (name == "PXB") return NVML_TOPOLOGY_MULTIPLE;
  if (name == "PHB") return NVML_TOPOLOGY_HOSTBRIDGE;
  if (name == "NODE") return NVML_TOPOLOGY_NODE;
  if (name == "SYS") return NVML_TOPOLOGY_SYSTEM;
  ok = false;
  return NVML_TOPOLOGY_SYSTEM;
}

unsigned long long Number(const std::map<std::string, std::string>& f, const std::string& key,
                          unsigned long long fallback) {
  auto it = f.find(key);
  return it == f.end() ? fallback : std::strtoull(it->second.c_str(), nullptr, 10);
}

bool Load(const std::string& path, Machine& m, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  std::string line;
  int line_number = 0;
  auto fail = [&](const std::string& what) {
    error = path + ":" + std::to_string(line_number) + ": " + what;
    return false;
  };
  while (std::getline(in, line)) {
    ++line_number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string directive;
    if (!(words >> directive)) continue;
    if (directive == "driver") {
      words >> m.driver;
    } else if (directive == "cuda") {
      words >> m.cuda;
    } else if (directive == "init_error") {
      words >> m.init_error;
    } else if (directive == "gpu") {
      auto f = Fields(words, error);
      if (!error.empty()) return fail(error);
      FakeGpu gpu;
      int index = static_cast<int>(m.gpus.size());
      gpu.name = f.count("name") ? f["name"] : "NVIDIA A100-SXM4-80GB";
      char uuid[64];
      std::snprintf(uuid, sizeof uuid, "GPU-00000000-0000-4000-8000-%012d", index);
      gpu.uuid = f.count("uuid") ? f["uuid"] : uuid;
      gpu.memory_mib = Number(f, "memory_mib", 81920);
      if (f.count("cc")) {
        if (std::sscanf(f["cc"].c_str(), "%d.%d", &gpu.cc_major, &gpu.cc_minor) != 2) {
          return fail("cc must be MAJOR.MINOR");
        }
      } else {
        gpu.cc_major = 8;
      }
      gpu.bus = 0x18 + 0x10 * static_cast<unsigned>(index);
      if (f.count("bus") && std::sscanf(f["bus"].c_str(), "%x:%x:%x", &gpu.domain, &gpu.bus,
                                        &gpu.device) != 3) {
        return fail("bus must be DOMAIN:BUS:DEVICE.FUNCTION");
      }
      gpu.minor = static_cast<unsigned>(Number(f, "minor", static_cast<unsigned>(index)));
      gpu.socket = static_cast<int>(Number(f, "socket", 0));
      gpu.pcie_switch = f.count("switch") ? static_cast<int>(Number(f, "switch", 0)) : -1 - index;
      gpu.mig = f.count("mig") ? f["mig"] : "off";
      if (gpu.mig != "on" && gpu.mig != "off" && gpu.mig != "unsupported") {
        return fail("mig must be on, off or unsupported");
      }
      gpu.events_supported = !(f.count("events") && f["events"] == "unsupported");
      gpu.events_denied = f.count("events") && f["events"] == "denied";
      gpu.handle = std::make_unique<nvmlDevice_st>();
      gpu.handle->gpu = index;
      m.gpus.push_back(std::move(gpu));
    } else if (directive == "topology" || directive == "nvlink" || directive == "nvswitch" ||
               directive == "mig") {
      auto f = Fields(words, error);
      if (!error.empty()) return fail(error);
      if (!f.count("gpu")) return fail("missing gpu=");
      int gpu = static_cast<int>(Number(f, "gpu", 0));
      if (gpu < 0 || gpu >= static_cast<int>(m.gpus.size())) return fail("no such gpu");
      int peer = static_cast<int>(Number(f, "peer", 0));
      bool needs_peer = directive == "topology" || directive == "nvlink";
      if (needs_peer && (!f.count("peer") || peer < 0 ||
                         peer >= static_cast<int>(m.gpus.size()) || peer == gpu)) {
        return fail("missing or bad peer=");
      }
      if (directive == "topology") {
        bool ok = false;
        auto level = ParseLevel(f["level"], ok);
        if (!ok) return fail("unknown level \"" + f["level"] + "\"");
        m.levels[{gpu, peer}] = level;
        m.levels[{peer, gpu}] = level;
      } else if (directive == "nvlink") {
        auto links = static_cast<unsigned>(Number(f, "links", 1));
        m.gpus[gpu].links.push_back({peer, links});
        m.gpus[peer].links.push_back({gpu, links});
      } else if (directive == "nvswitch") {
        m.gpus[gpu].links.push_back({-1, static_cast<unsigned>(Number(f, "links", 1))});
      } else {
        FakeMig mig;
        int slot = static_cast<int>(m.gpus[gpu].migs.size());
        mig.gi = static_cast<unsigned>(Number(f, "gi", 0));
        mig.ci = static_cast<unsigned>(Number(f, "ci", 0));
        mig.gi_slices = static_cast<unsigned>(Number(f, "gi_slices", 1));
        mig.ci_slices = static_cast<unsigned>(Number(f, "ci_slices", mig.gi_slices));
        mig.memory_mib = Number(f, "memory_mib", 0);
        mig.sms = static_cast<unsigned>(Number(f, "sms", 0));
        mig.profile_id = static_cast<unsigned>(Number(f, "profile_id", 0));
        mig.copy = static_cast<unsigned>(Number(f, "copy", 1));
        mig.decoders = static_cast<unsigned>(Number(f, "decoders", 0));
        mig.encoders = static_cast<unsigned>(Number(f, "encoders", 0));
        mig.jpeg = static_cast<unsigned>(Number(f, "jpeg", 0));
        mig.ofa = static_cast<unsigned>(Number(f, "ofa", 0));
        char uuid[64];
        std::snprintf(uuid, sizeof uuid, "MIG-00000000-0000-4000-8000-%06d%06d", gpu, slot);
        mig.uuid = f.count("uuid") ? f["uuid"] : uuid;
        mig.handle = std::make_unique<nvmlDevice_st>();
        mig.handle->gpu = gpu;
        mig.handle->mig = slot;
        mig.instance = std::make_unique<nvmlGpuInstance_st>();
        mig.instance->gpu = gpu;
        mig.instance->id = mig.gi;
        m.gpus[gpu].migs.push_back(std::move(mig));
      }
    } else {
      return fail("unknown directive \"" + directive + "\"");
    }
  }
  if (m.gpus.size() > 64) {
    error = path + ": at most 64 GPUs";
    return false;
  }
  return true;
}

// Applies the lines of the events file added since the last call. Must hold mu.
void PollEvents(bool deliver_xids) {
  if (machine.events_path.empty()) return;
  std::ifstream in(machine.events_path);
  if (!in) return;
  in.seekg(machine.events_offset);
  std::string line;
  while (true) {
    std::streampos start = in.tellg();
    if (!std::getline(in, line)) break;
    if (in.eof()) {  // a line still being written: read it next time
      in.clear();
      in.seekg(start);
      break;
    }
    machine.events_offset = in.tellg();
    std::istringstream words(line);
    std::string verb;
    int gpu = -1;
    if (!(words >> verb >> gpu) || gpu < 0 || gpu >= static_cast<int>(machine.gpus.size())) {
      continue;
    }
    if (verb == "lost") {
      machine.gpus[gpu].lost = true;
    } else if (verb == "recover") {
      machine.gpus[gpu].lost = false;
    } else if (verb == "xid" && deliver_xids) {
      Event event{gpu, 0, kNvmlValueNotAvailable, kNvmlValueNotAvailable};
      words >> event.xid;
      unsigned gi = 0, ci = 0;
      if (words >> gi >> ci) {
        event.gi = gi;
        event.ci = ci;
      }
      for (auto& set : machine.sets) {
        if (set->mask_by_gpu[gpu] & kNvmlEventTypeXidCriticalError) set->pending.push_back(event);
      }
    }
  }
}

// The GPU or MIG device behind a handle, after polling events. Must hold mu.
nvmlReturn_t Resolve(nvmlDevice_t handle, FakeGpu** gpu, FakeMig** mig) {
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  if (handle == nullptr || handle->gpu < 0 || handle->gpu >= static_cast<int>(machine.gpus.size())) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  PollEvents(true);
  *gpu = &machine.gpus[handle->gpu];
  *mig = nullptr;
  if (handle->mig >= 0) {
    if (handle->mig >= static_cast<int>((*gpu)->migs.size())) return NVML_ERROR_INVALID_ARGUMENT;
    *mig = &(*gpu)->migs[handle->mig];
  }
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& value, char* buffer, unsigned length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

void FillPci(const FakeGpu& gpu, nvmlPciInfo_t* info) {
  std::memset(info, 0, sizeof *info);
  info->domain = gpu.domain;
  info->bus = gpu.bus;
  info->device = gpu.device;
  std::snprintf(info->busId, sizeof info->busId, "%08X:%02X:%02X.0", gpu.domain, gpu.bus,
                gpu.device);
  std::snprintf(info->busIdLegacy, sizeof info->busIdLegacy, "%04X:%02X:%02X.0", gpu.domain,
                gpu.bus, gpu.device);
}

#define FAKE_RESOLVE(handle)                          \
  std::lock_guard<std::mutex> lock(mu);               \
  FakeGpu* gpu = nullptr;                             \
  FakeMig* mig = nullptr;                             \
  if (nvmlReturn_t r = Resolve(handle, &gpu, &mig); r != NVML_SUCCESS) return r

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(mu);
  if (machine.initialised) {
    ++machine.init_count;
    return NVML_SUCCESS;
  }
  const char* config = std::getenv("MUSTER_FAKE_NVML_CONFIG");
  if (config == nullptr || *config == '\0') return NVML_ERROR_DRIVER_NOT_LOADED;
  Machine fresh;
  std::string error;
  if (!Load(config, fresh, error)) {
    std::fprintf(stderr, "fake NVML: %s\n", error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  if (fresh.init_error != 0) return fresh.init_error;
  const char* events = std::getenv("MUSTER_FAKE_NVML_EVENTS");
  fresh.events_path = events != nullptr && *events != '\0' ? events : std::string(config) + ".events";
  machine = std::move(fresh);
  machine.initialised = true;
  machine.init_count = 1;
  PollEvents(false);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  if (--machine.init_count == 0) machine.initialised = false;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    default: return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  return CopyString(machine.driver, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  *version = machine.cuda;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  *count = static_cast<unsigned>(machine.gpus.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  if (index >= machine.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = machine.gpus[index].handle.get();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  PollEvents(true);
  for (auto& gpu : machine.gpus) {
    if (gpu.uuid == uuid) {
      *device = gpu.handle.get();
      return NVML_SUCCESS;
    }
    for (auto& mig : gpu.migs) {
      if (mig.uuid == uuid) {
        *device = mig.handle.get();
        return NVML_SUCCESS;
      }
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  FAKE_RESOLVE(device);
  return CopyString(mig != nullptr ? mig->uuid : gpu->uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  FAKE_RESOLVE(device);
  std::string value = gpu->name;
  if (mig != nullptr) value += " MIG " + std::to_string(mig->gi_slices) + "g";
  return CopyString(value, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned* minor) {
  FAKE_RESOLVE(device);
  if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
  *minor = gpu->minor;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_RESOLVE(device);
  if (gpu->lost) return NVML_ERROR_GPU_IS_LOST;
  unsigned long long mib = mig != nullptr ? mig->memory_mib : gpu->memory_mib;
  memory->total = mib * 1024ULL * 1024ULL;
  memory->used = 0;
  memory->free = memory->total;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_RESOLVE(device);
  if (gpu->lost) return NVML_ERROR_GPU_IS_LOST;
  FillPci(*gpu, pci);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                                 int* minor) {
  FAKE_RESOLVE(device);
  *major = gpu->cc_major;
  *minor = gpu->cc_minor;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                                  nvmlGpuTopologyLevel_t* level) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  if (a == nullptr || b == nullptr || a->mig >= 0 || b->mig >= 0) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  auto it = machine.levels.find({a->gpu, b->gpu});
  if (it != machine.levels.end()) {
    *level = it->second;
    return NVML_SUCCESS;
  }
  const FakeGpu& x = machine.gpus[a->gpu];
  const FakeGpu& y = machine.gpus[b->gpu];
  if (x.pcie_switch == y.pcie_switch) {
    *level = NVML_TOPOLOGY_SINGLE;
  } else if (x.socket == y.socket) {
    *level = NVML_TOPOLOGY_NODE;
  } else {
    *level = NVML_TOPOLOGY_SYSTEM;
  }
  return NVML_SUCCESS;
}

// Links are numbered in the order the machine file lists them, each entry taking `links` numbers.
namespace {
nvmlReturn_t Link(const FakeGpu& gpu, unsigned link, int* peer) {
  unsigned first = 0;
  for (const auto& [to, count] : gpu.links) {
    if (link < first + count) {
      *peer = to;
      return NVML_SUCCESS;
    }
    first += count;
  }
  return first == 0 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}
}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned link,
                                                       nvmlEnableState_t* active) {
  FAKE_RESOLVE(device);
  if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
  int peer = 0;
  if (nvmlReturn_t r = Link(*gpu, link, &peer); r != NVML_SUCCESS) return r;
  *active = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                  unsigned link,
                                                                  nvmlPciInfo_t* pci) {
  FAKE_RESOLVE(device);
  if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
  int peer = 0;
  if (nvmlReturn_t r = Link(*gpu, link, &peer); r != NVML_SUCCESS) return r;
  if (peer >= 0) {
    FillPci(machine.gpus[peer], pci);
  } else {  // an NVSwitch: a bus id that is no GPU's
    FakeGpu nvswitch;
    nvswitch.domain = 0;
    nvswitch.bus = 0xF0;
    FillPci(nvswitch, pci);
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned* current,
                                                   unsigned* pending) {
  FAKE_RESOLVE(device);
  if (mig != nullptr || gpu->mig == "unsupported") return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = gpu->mig == "on" ? kNvmlDeviceMigEnable : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned* count) {
  FAKE_RESOLVE(device);
  if (mig != nullptr || gpu->mig == "unsupported") return NVML_ERROR_NOT_SUPPORTED;
  *count = gpu->mig == "on" ? 7 : 0;
  if (gpu->migs.size() > *count) *count = static_cast<unsigned>(gpu->migs.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                  unsigned index,
                                                                  nvmlDevice_t* out) {
  FAKE_RESOLVE(device);
  if (mig != nullptr || gpu->mig != "on") return NVML_ERROR_NOT_SUPPORTED;
  if (index >= gpu->migs.size()) return NVML_ERROR_NOT_FOUND;
  *out = gpu->migs[index].handle.get();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned* id) {
  FAKE_RESOLVE(device);
  if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  *id = mig->gi;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned* id) {
  FAKE_RESOLVE(device);
  if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  *id = mig->ci;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                         nvmlDeviceAttributes_t* attributes) {
  FAKE_RESOLVE(device);
  if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(attributes, 0, sizeof *attributes);
  attributes->multiprocessorCount = mig->sms;
  attributes->sharedCopyEngineCount = mig->copy;
  attributes->sharedDecoderCount = mig->decoders;
  attributes->sharedEncoderCount = mig->encoders;
  attributes->sharedJpegCount = mig->jpeg;
  attributes->sharedOfaCount = mig->ofa;
  attributes->gpuInstanceSliceCount = mig->gi_slices;
  attributes->computeInstanceSliceCount = mig->ci_slices;
  attributes->memorySizeMB = mig->memory_mib;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned id,
                                                           nvmlGpuInstance_t* instance) {
  FAKE_RESOLVE(device);
  if (mig != nullptr || gpu->mig != "on") return NVML_ERROR_NOT_SUPPORTED;
  for (auto& m : gpu->migs) {
    if (m.gi == id) {
      *instance = m.instance.get();
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance,
                                                     nvmlGpuInstanceInfo_t* info) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  if (instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (auto& m : machine.gpus[instance->gpu].migs) {
    if (m.gi == instance->id) {
      std::memset(info, 0, sizeof *info);
      info->device = machine.gpus[instance->gpu].handle.get();
      info->id = m.gi;
      info->profileId = m.profile_id;
      info->placement.size = m.gi_slices;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  std::lock_guard<std::mutex> lock(mu);
  if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
  machine.sets.push_back(std::make_unique<FakeEventSet>());
  *set = reinterpret_cast<nvmlEventSet_t>(machine.sets.back().get());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                               unsigned long long* types) {
  FAKE_RESOLVE(device);
  if (!gpu->events_supported) return NVML_ERROR_NOT_SUPPORTED;
  *types = kNvmlEventTypeXidCriticalError | kNvmlEventTypeDoubleBitEccError |
           kNvmlEventTypeSingleBitEccError;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                       unsigned long long types,
                                                       nvmlEventSet_t set) {
  FAKE_RESOLVE(device);
  if (!gpu->events_supported) return NVML_ERROR_NOT_SUPPORTED;
  if (gpu->events_denied) return NVML_ERROR_NO_PERMISSION;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  reinterpret_cast<FakeEventSet*>(set)->mask_by_gpu[device->gpu] |= types;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!machine.initialised) return NVML_ERROR_UNINITIALIZED;
      PollEvents(true);
      auto* fake = reinterpret_cast<FakeEventSet*>(set);
      if (!fake->pending.empty()) {
        Event event = fake->pending.front();
        fake->pending.erase(fake->pending.begin());
        std::memset(data, 0, sizeof *data);
        data->device = machine.gpus[event.gpu].handle.get();
        data->eventType = kNvmlEventTypeXidCriticalError;
        data->eventData = event.xid;
        data->gpuInstanceId = event.gi;
        data->computeInstanceId = event.ci;
        return NVML_SUCCESS;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = machine.sets.begin(); it != machine.sets.end(); ++it) {
    if (reinterpret_cast<nvmlEventSet_t>(it->get()) == set) {
      machine.sets.erase(it);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}
