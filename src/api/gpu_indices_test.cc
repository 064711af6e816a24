#include "api/gpu_indices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

TEST(GpuIndicesTest, WhatTheSchedulerWritesTheNodeAndTheCoreReadBack) {
  EXPECT_EQ(FormatGpuIndices({0, 3}), "0,3");
  EXPECT_EQ(FormatGpuIndices({}), "");
  EXPECT_THAT(ParseGpuIndices(FormatGpuIndices({7, 0, 12})), Optional(ElementsAre(7, 0, 12)));
  EXPECT_THAT(ParseGpuIndices(""), Optional(ElementsAre()));
  EXPECT_THAT(ParseGpuIndices("999999"), Optional(ElementsAre(999999)));
}

TEST(GpuIndicesTest, AnythingElseIsMalformed) {
  for (std::string_view bad : {"0,", ",0", "0,,3", "+3", " 3", "3 ", "-1", "a", "1000000", ","}) {
    EXPECT_EQ(ParseGpuIndices(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace muster::api
