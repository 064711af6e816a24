#include "common/container_log.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::common {
namespace {

using std::chrono::system_clock;

system_clock::time_point At(int64_t unix_nanos) {
  return system_clock::time_point(
      std::chrono::duration_cast<system_clock::duration>(std::chrono::nanoseconds(unix_nanos)));
}

ContainerLogIndex IndexOf(const std::string& log_path) {
  ContainerLogIndex index;
  index.Append(ReadFile(ContainerLogIndexPath(log_path)).value_or(""));
  return index;
}

class ContainerLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/muster-container-log-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    log_ = dir_ + "/c.log";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  std::string log_;
};

TEST_F(ContainerLogTest, TheLogIsWhatWasWrittenAndTheIndexSaysWhenEachLineStarted) {
  auto writer = ContainerLogWriter::Open(log_, /*truncate=*/false, "muster://u-c-0", At(1000));
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE(writer->Append("one\ntw", At(2000)).ok());
  ASSERT_TRUE(writer->Append("o\n", At(3000)).ok());  // continues a line: no record
  ASSERT_TRUE(writer->Append("three\nfour\n", At(4000)).ok());
  EXPECT_EQ(ReadFile(log_).value_or(""), "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(ReadFile(ContainerLogIndexPath(log_)).value_or(""),
            "R 0 1000 muster://u-c-0\nT 0 2000\nT 8 4000\n");

  ContainerLogIndex index = IndexOf(log_);
  ASSERT_EQ(index.runs().size(), 1u);
  EXPECT_EQ(index.runs()[0].id, "muster://u-c-0");
  EXPECT_EQ(index.runs()[0].begin, 0);
  EXPECT_EQ(index.runs()[0].end, -1);
  EXPECT_EQ(index.LineTime(0), 2000);   // "one"
  EXPECT_EQ(index.LineTime(4), 2000);   // "two" began in the first chunk
  EXPECT_EQ(index.LineTime(8), 4000);   // "three"
  EXPECT_EQ(index.LineTime(14), 4000);  // "four", in the same chunk
}

TEST_F(ContainerLogTest, RunsAppendAndEachStartsALineUnlessTruncated) {
  {
    auto first = ContainerLogWriter::Open(log_, false, "run-0", At(10));
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(first->Append("no newline", At(11)).ok());
  }
  auto second = ContainerLogWriter::Open(log_, false, "run-1", At(20));
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(second->Append("next\n", At(21)).ok());
  EXPECT_EQ(ReadFile(log_).value_or(""), "no newlinenext\n");
  ContainerLogIndex index = IndexOf(log_);
  ASSERT_EQ(index.runs().size(), 2u);
  EXPECT_EQ(index.runs()[0].end, 10);
  EXPECT_EQ(index.runs()[1].begin, 10);
  EXPECT_TRUE(index.IsRunStart(10));
  EXPECT_FALSE(index.IsRunStart(3));
  EXPECT_EQ(index.LineTime(10), 21);
  ASSERT_NE(index.FindRun("run-0"), nullptr);
  EXPECT_EQ(index.FindRun("run-0")->begin, 0);
  EXPECT_EQ(index.FindRun("run-9"), nullptr);

  auto fresh = ContainerLogWriter::Open(log_, /*truncate=*/true, "new-pod", At(30));
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(fresh->Append("hello\n", At(31)).ok());
  EXPECT_EQ(ReadFile(log_).value_or(""), "hello\n");
  EXPECT_EQ(IndexOf(log_).runs().size(), 1u);
}

TEST_F(ContainerLogTest, ALogWithoutAnIndexHasNoRunsAndNoTimes) {
  std::ofstream(log_) << "by hand\n";
  ContainerLogIndex index = IndexOf(log_);
  EXPECT_TRUE(index.runs().empty());
  EXPECT_EQ(index.LineTime(0), std::nullopt);
}

TEST(ContainerLogIndexTest, ReadInPiecesTornAndDamagedRecordsAreSkipped) {
  ContainerLogIndex index;
  index.Append("R 0 5 a\nT 0 6\nT 4");  // the last record is not complete yet
  EXPECT_EQ(index.LineTime(4), 6);
  index.Append(" 7\nbogus\nT x 8\nT 2 9\nR 9 10 b\n");  // T 2 goes back: left out
  EXPECT_EQ(index.LineTime(4), 7);
  EXPECT_EQ(index.LineTime(3), 6);
  ASSERT_EQ(index.runs().size(), 2u);
  EXPECT_EQ(index.runs()[0].end, 9);
  EXPECT_EQ(index.LineTime(9), 10);  // a run's start counts as its first line's time
}

// Property: however the output is cut into appends, every line's time is the time of the append
// that carried its first byte, and the log is the output unchanged.
TEST_F(ContainerLogTest, EveryLineGetsTheTimeOfTheAppendThatCarriedItsFirstByte) {
  std::mt19937 rng(7);
  std::string output;
  for (int i = 0; i < 200; ++i) output += std::string(rng() % 5, 'x') + "\n";
  auto writer = ContainerLogWriter::Open(log_, false, "r", At(0));
  ASSERT_TRUE(writer.ok());
  std::vector<int64_t> time_of_byte(output.size());
  int64_t now = 0;
  for (size_t at = 0; at < output.size();) {
    const size_t n = std::min<size_t>(rng() % 9 + 1, output.size() - at);
    now += 1000;
    std::fill(time_of_byte.begin() + static_cast<std::ptrdiff_t>(at),
              time_of_byte.begin() + static_cast<std::ptrdiff_t>(at + n), now);
    ASSERT_TRUE(writer->Append(std::string_view(output).substr(at, n), At(now)).ok());
    at += n;
  }
  EXPECT_EQ(ReadFile(log_).value_or(""), output);
  ContainerLogIndex index = IndexOf(log_);
  for (size_t line = 0; line < output.size(); line = output.find('\n', line) + 1) {
    EXPECT_EQ(index.LineTime(static_cast<int64_t>(line)), time_of_byte[line]) << "line at " << line;
  }
}

}  // namespace
}  // namespace muster::common
