#include "common/files.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::common {
namespace {

unsigned Mode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/muster-files-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    umask_ = ::umask(022);
  }
  void TearDown() override {
    ::umask(umask_);
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  mode_t umask_ = 0;
};

TEST_F(FilesTest, CreatesMissingDirectoriesOwnerOnlyWhateverTheUmask) {
  ASSERT_TRUE(CreatePrivateDirectories(dir_ + "/a/b/c").ok());
  EXPECT_EQ(Mode(dir_ + "/a"), 0700u);
  EXPECT_EQ(Mode(dir_ + "/a/b"), 0700u);
  EXPECT_EQ(Mode(dir_ + "/a/b/c"), 0700u);
  EXPECT_TRUE(CreatePrivateDirectories(dir_ + "/a/b/c/").ok());  // exists: nothing to do
}

TEST_F(FilesTest, LeavesTheModeOfExistingDirectoriesAlone) {
  ASSERT_EQ(::mkdir((dir_ + "/shared").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir_ + "/shared").c_str(), 0755), 0);
  ASSERT_TRUE(CreatePrivateDirectories(dir_ + "/shared/muster").ok());
  EXPECT_EQ(Mode(dir_ + "/shared"), 0755u);
  EXPECT_EQ(Mode(dir_ + "/shared/muster"), 0700u);
}

TEST_F(FilesTest, AFileInTheWayIsUnavailableNamingIt) {
  std::ofstream(dir_ + "/file") << "x";
  absl::Status s = CreatePrivateDirectories(dir_ + "/file/sub");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), ::testing::HasSubstr(dir_ + "/file"));
}

}  // namespace
}  // namespace muster::common
