// The gpushare, multigpu and cpu trace variants (sim/variants.h) drawn from the openb default
// trace in data/openb/: what is kept, what is drawn, the share reached, determinism by seed, the
// CSV round trip and bad input.

#include "sim/variants.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::sim {
namespace {

using ::testing::HasSubstr;

const std::vector<TracePod>& DefaultPods() {
  static const std::vector<TracePod> pods = [] {
    auto p = LoadOpenbPods(std::string(MUSTER_SOURCE_DIR) + "/data/openb/openb_pod_list_default.csv");
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : std::vector<TracePod>{};
  }();
  return pods;
}

// A pod's row without its name, to find where a drawn pod came from.
using Row = std::tuple<int64_t, int64_t, int, int64_t, std::string, std::string, std::string,
                       std::optional<int64_t>, std::optional<int64_t>, std::optional<int64_t>>;
Row RowOf(const TracePod& p) {
  return {p.cpu_milli,  p.memory_mib, p.num_gpu,       p.gpu_milli,     p.gpu_spec,
          p.qos,        p.pod_phase,  p.creation_time, p.deletion_time, p.scheduled_time};
}

struct Counts {
  int cpu = 0, shares = 0, whole = 0;
};
Counts CountOf(const std::vector<TracePod>& pods) {
  Counts c;
  for (const TracePod& p : pods) {
    if (!UsesGpu(p)) {
      ++c.cpu;
    } else if (SharesGpu(p)) {
      ++c.shares;
    } else {
      ++c.whole;
    }
  }
  return c;
}

TEST(GpuShareVariantTest, TheDefaultTraceIsWhereThePublishedVariantsStart) {
  // 8,152 pods: 1,088 CPU-only, 3,078 GPU shares carrying 28.45 % of the GPU demand, 3,986
  // whole-GPU pods (docs/fgd.md section 1.2).
  Counts c = CountOf(DefaultPods());
  EXPECT_EQ(c.cpu, 1088);
  EXPECT_EQ(c.shares, 3078);
  EXPECT_EQ(c.whole, 3986);
  EXPECT_NEAR(ShareOfGpuDemand(DefaultPods()), 28.45, 0.005);
}

TEST(GpuShareVariantTest, RedrawsTheGpuPodsSoThatSharesCarryTheAskedDemand) {
  const auto& source = DefaultPods();
  auto v = GpuShareVariant(source, 60, 1);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), source.size());
  Counts c = CountOf(*v);
  // CPU-only pods unchanged and first; GPU pods as many as before, now 5,259 shares
  // (round(7064 x 0.6 x 1092.57 / (0.4 x 562.64 + 0.6 x 1092.57))).
  EXPECT_EQ(c.cpu, 1088);
  EXPECT_EQ(c.shares, 5259);
  EXPECT_EQ(c.whole, 7064 - 5259);
  EXPECT_NEAR(ShareOfGpuDemand(*v), 60, 1.0);
  std::vector<const TracePod*> cpu_source;
  for (const auto& p : source) {
    if (!UsesGpu(p)) cpu_source.push_back(&p);
  }
  for (size_t i = 0; i < cpu_source.size(); ++i) {
    EXPECT_EQ(RowOf((*v)[i]), RowOf(*cpu_source[i])) << "pod " << i;
  }
  // Then the shares, then the other GPU pods, each a row of the source; renamed in order.
  std::set<Row> rows;
  for (const auto& p : source) rows.insert(RowOf(p));
  for (size_t i = 0; i < v->size(); ++i) {
    const TracePod& p = (*v)[i];
    EXPECT_EQ(p.name, fmt::format("openb-pod-{:04d}", i));
    EXPECT_TRUE(rows.count(RowOf(p))) << p.name << " is no row of the default trace";
    if (i >= 1088 && i < 1088 + 5259u) {
      EXPECT_TRUE(SharesGpu(p)) << p.name;
    } else if (i >= 1088 + 5259u) {
      EXPECT_TRUE(UsesGpu(p) && !SharesGpu(p)) << p.name;
    }
  }
  // 5,259 shares from 3,078 are drawn with replacement (about 3078 (1 - e^(-5259/3078)) = 2,521
  // distinct rows, where keeping every share and adding more would give 3,071), 1,805 whole-GPU
  // pods from 3,986 without: no source row twice but for the default trace's own duplicates.
  std::set<Row> whole_rows;
  for (size_t i = 1088 + 5259; i < v->size(); ++i) whole_rows.insert(RowOf((*v)[i]));
  EXPECT_GE(whole_rows.size(), 1805u - 10);
  std::set<Row> share_rows;
  for (size_t i = 1088; i < 1088 + 5259u; ++i) share_rows.insert(RowOf((*v)[i]));
  EXPECT_GT(share_rows.size(), 2300u);
  EXPECT_LT(share_rows.size(), 2750u);
}

TEST(GpuShareVariantTest, SameSeedSameFileOtherSeedOtherDraw) {
  auto a = GpuShareVariant(DefaultPods(), 80, 7);
  auto b = GpuShareVariant(DefaultPods(), 80, 7);
  auto c = GpuShareVariant(DefaultPods(), 80, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(OpenbPodsCsv(*a), OpenbPodsCsv(*b));
  EXPECT_NE(OpenbPodsCsv(*a), OpenbPodsCsv(*c));
  EXPECT_EQ(CountOf(*a).shares, CountOf(*c).shares);  // the counts follow from the share alone
}

TEST(GpuShareVariantTest, TheEnds) {
  auto all = GpuShareVariant(DefaultPods(), 100, 1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(CountOf(*all).shares, 7064);
  EXPECT_EQ(CountOf(*all).whole, 0);
  EXPECT_DOUBLE_EQ(ShareOfGpuDemand(*all), 100);
  auto none = GpuShareVariant(DefaultPods(), 0, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(CountOf(*none).shares, 0);
  EXPECT_EQ(CountOf(*none).whole, 7064);
}

TEST(GpuShareVariantTest, BadInputIsNamed) {
  for (double bad : {-1.0, 100.5, std::nan("")}) {
    auto v = GpuShareVariant(DefaultPods(), bad, 1);
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("within 0..100"));
  }
  std::vector<TracePod> cpu_only = {{"a", 1000, 10, 0, 0, "", "", "", {}, {}, {}}};
  EXPECT_THAT(std::string(GpuShareVariant(cpu_only, 50, 1).status().message()),
              HasSubstr("no GPU pods"));
  std::vector<TracePod> whole_only = {{"a", 1000, 10, 1, 1000, "", "", "", {}, {}, {}}};
  EXPECT_THAT(std::string(GpuShareVariant(whole_only, 50, 1).status().message()),
              HasSubstr("no GPU-sharing pods"));
  EXPECT_TRUE(GpuShareVariant(whole_only, 0, 1).ok());
}

TEST(GpuShareVariantTest, CsvReadsBackAsTheSamePods) {
  auto v = GpuShareVariant(DefaultPods(), 40, 3);
  ASSERT_TRUE(v.ok());
  (*v)[0].scheduled_time.reset();  // an absent time is an empty field
  char tmpl[] = "/tmp/muster-variant-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/v.csv";
  std::ofstream(path) << OpenbPodsCsv(*v);
  auto back = LoadOpenbPods(path);
  std::filesystem::remove_all(tmpl);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    EXPECT_EQ((*back)[i].name, (*v)[i].name);
    EXPECT_EQ(RowOf((*back)[i]), RowOf((*v)[i])) << (*v)[i].name;
  }
}

TEST(MultiGpuVariantTest, KeepsTheTraceAndAddsMultiGpuPodsUntilTheyCarryTheShare) {
  // The default trace: 75 multi-GPU pods carrying 7.29 % of the GPU demand.
  EXPECT_NEAR(MultiGpuShareOfGpuDemand(DefaultPods()), 7.29, 0.005);
  std::set<Row> multi_rows;
  int64_t largest = 0;
  for (const TracePod& p : DefaultPods()) {
    if (MultiGpu(p)) {
      multi_rows.insert(RowOf(p));
      largest = std::max(largest, GpuDemand(p));
    }
  }
  int64_t all = 0;
  for (const TracePod& p : DefaultPods()) all += GpuDemand(p);
  for (double x : {20.0, 40.0}) {
    auto v = MultiGpuVariant(DefaultPods(), x, 1);
    ASSERT_TRUE(v.ok()) << v.status();
    const auto& pods = DefaultPods();
    ASSERT_GT(v->size(), pods.size());
    for (size_t i = 0; i < pods.size(); ++i) {  // the trace, whole and in order
      ASSERT_EQ(RowOf((*v)[i]), RowOf(pods[i])) << i;
    }
    for (size_t i = pods.size(); i < v->size(); ++i) {  // then copies of its multi-GPU pods
      ASSERT_TRUE(multi_rows.count(RowOf((*v)[i]))) << i;
    }
    for (size_t i = 0; i < v->size(); ++i) {
      EXPECT_EQ((*v)[i].name, fmt::format("openb-pod-{:04d}", i));
    }
    // The share reached: at least x, and the last pod added was still needed.
    const double share = MultiGpuShareOfGpuDemand(*v);
    EXPECT_GE(share, x);
    std::vector<TracePod> less(v->begin(), v->end() - 1);
    EXPECT_LT(MultiGpuShareOfGpuDemand(less), x);
    EXPECT_LT(share, x + 100.0 * static_cast<double>(largest) / static_cast<double>(all));
  }
  // The published lists added 172 (20 %) and 594 (40 %) pods; the draw lands near them.
  auto v20 = MultiGpuVariant(DefaultPods(), 20, 1);
  ASSERT_TRUE(v20.ok());
  EXPECT_GT(v20->size(), DefaultPods().size() + 120);
  EXPECT_LT(v20->size(), DefaultPods().size() + 230);
}

TEST(MultiGpuVariantTest, SameSeedSameFileOtherSeedOtherDraw) {
  auto a = MultiGpuVariant(DefaultPods(), 30, 7);
  auto b = MultiGpuVariant(DefaultPods(), 30, 7);
  auto c = MultiGpuVariant(DefaultPods(), 30, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(OpenbPodsCsv(*a), OpenbPodsCsv(*b));
  EXPECT_NE(OpenbPodsCsv(*a), OpenbPodsCsv(*c));
}

TEST(MultiGpuVariantTest, BadInputIsNamed) {
  for (double bad : {-1.0, 100.0, std::nan("")}) {
    auto v = MultiGpuVariant(DefaultPods(), bad, 1);
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("within 0..100"));
  }
  EXPECT_THAT(std::string(MultiGpuVariant(DefaultPods(), 5, 1).status().message()),
              HasSubstr("already carry 7.29 %"));
  std::vector<TracePod> single = {{"a", 1000, 10, 1, 1000, "", "", "", {}, {}, {}}};
  EXPECT_THAT(std::string(MultiGpuVariant(single, 50, 1).status().message()),
              HasSubstr("no multi-GPU pods"));
  // The trace's own share: no pod added.
  auto same = MultiGpuVariant(DefaultPods(), MultiGpuShareOfGpuDemand(DefaultPods()), 1);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->size(), DefaultPods().size());
}

TEST(CpuOnlyVariantTest, KeepsTheGpuPodsAndDrawsCpuOnlyPodsToTheShare) {
  // The default trace: 1,088 CPU-only pods of 8,152 (13.35 %).
  EXPECT_NEAR(CpuOnlyShareOfPods(DefaultPods()), 13.35, 0.005);
  std::map<Row, int> cpu_rows;  // each CPU-only row and how often the trace has it
  std::vector<Row> gpu_rows;
  for (const TracePod& p : DefaultPods()) {
    if (UsesGpu(p)) {
      gpu_rows.push_back(RowOf(p));
    } else {
      ++cpu_rows[RowOf(p)];
    }
  }
  ASSERT_EQ(gpu_rows.size(), 7064u);
  // 5 %: fewer than the trace has, drawn without replacement; 25 %: more, with replacement.
  for (double x : {5.0, 25.0}) {
    auto v = CpuOnlyVariant(DefaultPods(), x, 1);
    ASSERT_TRUE(v.ok()) << v.status();
    const size_t want = std::lround(7064 * (x / 100) / (1 - x / 100));
    ASSERT_EQ(v->size(), 7064 + want);
    std::map<Row, int> drawn;
    for (size_t i = 0; i < want; ++i) {  // CPU-only copies of the trace's CPU-only rows first
      ASSERT_FALSE(UsesGpu((*v)[i])) << i;
      ASSERT_TRUE(cpu_rows.count(RowOf((*v)[i]))) << i;
      ++drawn[RowOf((*v)[i])];
    }
    for (size_t i = 0; i < gpu_rows.size(); ++i) {  // then every GPU pod, in order
      ASSERT_EQ(RowOf((*v)[want + i]), gpu_rows[i]) << i;
    }
    for (size_t i = 0; i < v->size(); ++i) {
      EXPECT_EQ((*v)[i].name, fmt::format("openb-pod-{:04d}", i));
    }
    // The share reached: within half a pod of x.
    EXPECT_NEAR(CpuOnlyShareOfPods(*v), x, 100.0 * 0.5 / static_cast<double>(v->size()));
    bool over = false;  // some row drawn more often than the trace has it
    for (const auto& [row, n] : drawn) over = over || n > cpu_rows[row];
    EXPECT_EQ(over, x == 25.0);
  }
  // The published cpu250 has 2,356 CPU-only pods; 25 % asks round(7064 x 0.25 / 0.75) = 2,355.
  auto v250 = CpuOnlyVariant(DefaultPods(), 25, 1);
  ASSERT_TRUE(v250.ok());
  EXPECT_EQ(v250->size(), 7064u + 2355u);
  // 0: the GPU pods alone (the published cpu0 is the 7,064 GPU pods).
  auto v0 = CpuOnlyVariant(DefaultPods(), 0, 1);
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(v0->size(), 7064u);
  EXPECT_EQ(CpuOnlyShareOfPods(*v0), 0);
}

TEST(CpuOnlyVariantTest, SameSeedSameFileOtherSeedOtherDraw) {
  auto a = CpuOnlyVariant(DefaultPods(), 25, 7);
  auto b = CpuOnlyVariant(DefaultPods(), 25, 7);
  auto c = CpuOnlyVariant(DefaultPods(), 25, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(OpenbPodsCsv(*a), OpenbPodsCsv(*b));
  EXPECT_NE(OpenbPodsCsv(*a), OpenbPodsCsv(*c));
}

TEST(CpuOnlyVariantTest, BadInputIsNamed) {
  for (double bad : {-1.0, 100.0, std::nan("")}) {
    auto v = CpuOnlyVariant(DefaultPods(), bad, 1);
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("within 0..100"));
  }
  std::vector<TracePod> gpu_only = {{"a", 1000, 10, 1, 1000, "", "", "", {}, {}, {}}};
  // 60 % of one GPU pod asks round(1.5) = 2 CPU-only pods, 20 % round(0.25) = 0.
  EXPECT_THAT(std::string(CpuOnlyVariant(gpu_only, 60, 1).status().message()),
              HasSubstr("no CPU-only pods"));
  auto zero = CpuOnlyVariant(gpu_only, 20, 1);  // nothing to draw: fine
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->size(), 1u);
  std::vector<TracePod> cpu_only = {{"a", 1000, 10, 0, 0, "", "", "", {}, {}, {}}};
  EXPECT_THAT(std::string(CpuOnlyVariant(cpu_only, 20, 1).status().message()),
              HasSubstr("no GPU pods"));
}

}  // namespace
}  // namespace muster::sim
