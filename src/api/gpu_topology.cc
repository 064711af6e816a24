// The muster.dev/gpu-topology codec (gpu_topology.h): NVLink counts between a node's GPUs, as
// NVML reports them (nvmlDeviceGetNvLinkState / nvmlDeviceGetNvLinkRemotePciInfo, summed per
// peer the way `nvidia-smi topo -m` prints NV<n>), in a versioned one-line form. muster's own.

#include "api/gpu_topology.h"

#include <charconv>
#include <optional>

#include "fmt/format.h"

namespace muster::api {
namespace {

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(std::string(what));
}

// A decimal number of 1 to 7 digits; nullopt for anything else.
std::optional<int> Decimal(std::string_view text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text[0] == '+' || text[0] == '-') {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

GpuTopology::GpuTopology(int gpus)
    : gpus_(gpus), links_(static_cast<size_t>(gpus) * static_cast<size_t>(gpus), 0) {}

void GpuTopology::SetNvLinks(int a, int b, int links) {
  if (a < 0 || b < 0 || a >= gpus_ || b >= gpus_ || a == b) return;
  links_[static_cast<size_t>(a) * gpus_ + b] = links;
  links_[static_cast<size_t>(b) * gpus_ + a] = links;
}

bool GpuTopology::HasNvLinks() const {
  for (int l : links_) {
    if (l > 0) return true;
  }
  return false;
}

absl::StatusOr<GpuTopology> GpuTopology::FromMatrix(const std::vector<std::vector<int>>& links) {
  const int n = static_cast<int>(links.size());
  if (n > kMaxTopologyGpus) {
    return Malformed(fmt::format("{} GPUs; at most {}", n, kMaxTopologyGpus));
  }
  for (int a = 0; a < n; ++a) {
    if (static_cast<int>(links[a].size()) != n) {
      return Malformed(fmt::format("[{}]: {} entries, but there are {} GPUs (one per GPU)", a,
                                   links[a].size(), n));
    }
  }
  GpuTopology topology(n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const int l = links[a][b];
      if (l < 0 || l > kMaxNvLinksPerPair) {
        return Malformed(fmt::format("[{}][{}]: {} NVLinks; give 0 to {}", a, b, l,
                                     kMaxNvLinksPerPair));
      }
      if (a == b && l != 0) {
        return Malformed(fmt::format("[{}][{}]: {} NVLinks from GPU {} to itself; give 0", a, b,
                                     l, a));
      }
      // Met first with a < b: an earlier row would have shown it otherwise.
      if (links[b][a] != l) {
        return Malformed(
            fmt::format("[{}][{}]: {} NVLinks, but [{}][{}] says {} (links are the same both ways)",
                        b, a, links[b][a], a, b, l));
      }
      if (a < b) topology.SetNvLinks(a, b, l);
    }
  }
  return topology;
}

std::string FormatGpuTopology(const GpuTopology& topology) {
  std::string out = fmt::format("v1;gpus={};nvlink=", topology.gpus());
  bool first = true;
  for (int a = 0; a < topology.gpus(); ++a) {
    for (int b = a + 1; b < topology.gpus(); ++b) {
      const int l = topology.NvLinks(a, b);
      if (l == 0) continue;
      if (!first) out += ',';
      first = false;
      out += fmt::format("{}-{}:{}", a, b, l);
    }
  }
  return out;
}

std::string GpuTopologyValue(const std::vector<std::vector<int>>& nvlinks) {
  absl::StatusOr<GpuTopology> topology = GpuTopology::FromMatrix(nvlinks);
  if (!topology.ok() || !topology->HasNvLinks()) return "";
  return FormatGpuTopology(*topology);
}

absl::StatusOr<GpuTopology> ParseGpuTopology(std::string_view text) {
  std::vector<std::string_view> parts = Split(text, ';');
  if (parts[0] != "v1") {
    return Malformed(fmt::format("\"{}\" is not a version this scheduler reads; expected v1;gpus=N;"
                                 "nvlink=A-B:LINKS,...",
                                 parts[0]));
  }
  if (parts.size() != 3 || parts[1].substr(0, 5) != "gpus=" || parts[2].substr(0, 7) != "nvlink=") {
    return Malformed("expected v1;gpus=N;nvlink=A-B:LINKS,... (nvlink= may be empty)");
  }
  std::optional<int> gpus = Decimal(parts[1].substr(5));
  if (!gpus || *gpus < 1 || *gpus > kMaxTopologyGpus) {
    return Malformed(fmt::format("gpus: \"{}\" is not a number of GPUs from 1 to {}",
                                 parts[1].substr(5), kMaxTopologyGpus));
  }
  GpuTopology topology(*gpus);
  std::string_view pairs = parts[2].substr(7);
  if (pairs.empty()) return topology;
  for (std::string_view pair : Split(pairs, ',')) {
    const size_t dash = pair.find('-');
    const size_t colon = pair.find(':');
    std::optional<int> a, b, links;
    if (dash != std::string_view::npos && colon != std::string_view::npos && dash < colon) {
      a = Decimal(pair.substr(0, dash));
      b = Decimal(pair.substr(dash + 1, colon - dash - 1));
      links = Decimal(pair.substr(colon + 1));
    }
    if (!a || !b || !links) {
      return Malformed(
          fmt::format("nvlink: \"{}\" is not A-B:LINKS (two GPU numbers and a count)", pair));
    }
    for (int g : {*a, *b}) {
      if (g >= *gpus) {
        return Malformed(fmt::format("nvlink: \"{}\": GPU {} is out of range (gpus={}, so 0 to {})",
                                     pair, g, *gpus, *gpus - 1));
      }
    }
    if (*a == *b) {
      return Malformed(fmt::format("nvlink: \"{}\": a GPU is not linked to itself", pair));
    }
    if (*links < 1 || *links > kMaxNvLinksPerPair) {
      return Malformed(
          fmt::format("nvlink: \"{}\": {} NVLinks; give 1 to {} (leave out a pair with none)",
                      pair, *links, kMaxNvLinksPerPair));
    }
    if (const int before = topology.NvLinks(*a, *b); before != 0) {
      return Malformed(fmt::format(
          "nvlink: \"{}\": GPUs {} and {} are given twice (first with {} NVLinks; links are the "
          "same both ways, so give each pair once)",
          pair, std::min(*a, *b), std::max(*a, *b), before));
    }
    topology.SetNvLinks(*a, *b, *links);
  }
  return topology;
}

}  // namespace muster::api
