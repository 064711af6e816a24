#include "scheduler/conf_watcher.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace muster::scheduler {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;

class ConfWatcherTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "conf-watcher-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/volcano-scheduler.conf";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes the file and gives it a distinct modification time (`second` seconds past a fixed
  // epoch), so that a rewrite within one clock tick is still seen.
  void Write(const std::string& text, int second) {
    std::ofstream(path_, std::ios::trunc) << text;
    struct timespec times[2] = {{1700000000 + second, 0}, {1700000000 + second, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path_.c_str(), times, 0), 0);
  }

  std::string dir_, path_;
};

constexpr char kAllocateOnly[] = R"(actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
)";

TEST_F(ConfWatcherTest, NoFileMeansTheBuiltInDefault) {
  ConfWatcher w(path_);
  ASSERT_TRUE(w.Load().ok());
  EXPECT_EQ(w.conf(), core::DefaultSchedulerConf());
  EXPECT_EQ(w.Source(), "the built-in default");
  ConfWatcher none("");
  ASSERT_TRUE(none.Load().ok());
  EXPECT_EQ(none.conf(), core::DefaultSchedulerConf());
}

TEST_F(ConfWatcherTest, ABadFileAtStartIsAnError) {
  Write("actions: \"allocate, teleport\"\n", 1);
  ConfWatcher w(path_);
  absl::Status st = w.Load();
  EXPECT_TRUE(absl::IsInvalidArgument(st));
  EXPECT_THAT(std::string(st.message()), HasSubstr(path_));
  EXPECT_THAT(std::string(st.message()), HasSubstr("teleport"));
}

TEST_F(ConfWatcherTest, ReloadsWhenTheFileChangesAndKeepsTheOldOneWhenItIsBad) {
  Write(kAllocateOnly, 1);
  ConfWatcher w(path_);
  ASSERT_TRUE(w.Load().ok());
  EXPECT_THAT(w.conf().actions, ElementsAre("allocate"));
  EXPECT_FALSE(w.Poll().reloaded);  // unchanged

  Write("actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: gang\n", 2);
  ConfWatcher::Change c = w.Poll();
  EXPECT_TRUE(c.reloaded);
  EXPECT_TRUE(c.error.empty());
  EXPECT_THAT(w.conf().actions, ElementsAre("enqueue", "allocate", "backfill"));

  Write("actions: [unclosed\n", 3);
  c = w.Poll();
  EXPECT_FALSE(c.reloaded);
  EXPECT_THAT(c.error, HasSubstr(path_));
  EXPECT_THAT(c.message, HasSubstr("keeping the configuration"));
  EXPECT_THAT(w.conf().actions, ElementsAre("enqueue", "allocate", "backfill"));
  // The same bad version is reported once.
  EXPECT_TRUE(w.Poll().message.empty());

  Write(kAllocateOnly, 4);
  EXPECT_TRUE(w.Poll().reloaded);
  EXPECT_THAT(w.conf().actions, ElementsAre("allocate"));

  std::filesystem::remove(path_);
  c = w.Poll();
  EXPECT_TRUE(c.reloaded);
  EXPECT_EQ(w.conf(), core::DefaultSchedulerConf());
}

}  // namespace
}  // namespace muster::scheduler
