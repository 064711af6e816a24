#include "api/batch_indexes.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using ::testing::ElementsAre;

TEST(BatchIndexesTest, FormatsAsKubeWritesCompletedIndexes) {
  EXPECT_EQ(FormatIndexes({}), "");
  EXPECT_EQ(FormatIndexes({1, 3, 4, 5, 7}), "1,3-5,7");
  EXPECT_EQ(FormatIndexes({0, 1}), "0,1");
  EXPECT_EQ(FormatIndexes({0, 1, 2, 3}), "0-3");
}

TEST(BatchIndexesTest, ParsesWithValidationsMessages) {
  ASSERT_TRUE(ParseIndexes("1,3-5,7", 8).ok());
  EXPECT_THAT(*ParseIndexes("1,3-5,7", 8), ElementsAre(1, 3, 4, 5, 7));
  EXPECT_EQ(ParseIndexes("8", 8).status().message(), "too large index: \"8\"");
  EXPECT_EQ(ParseIndexes("3,2", 8).status().message(),
            "non-increasing order, previous: 3, current: 2");
  EXPECT_EQ(ParseIndexes("a", 8).status().message(),
            "cannot convert string to integer for index: \"a\"");
  EXPECT_EQ(ParseIndexes("1-2-3", 8).status().message(),
            "the fragment \"1-2-3\" violates the requirement that an index interval can have at "
            "most two parts separated by '-'");
}

}  // namespace
}  // namespace muster::api
