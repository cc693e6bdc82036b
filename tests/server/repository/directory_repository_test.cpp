// The folder repository on a real folder: entries round-trip, replace and go, a scan sees each
// once, what a crashed writer leaves is never listed, and names never depend on the id's bytes.
#include "server/repository/directory_repository.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "../../client/temp_folder.hpp"
#include "kernels/errors.hpp"

namespace svdserve {
namespace {

TEST(DirectoryRepositoryTest, PutGetReplaceErase) {
  svdserve::testing::TempFolder folder("repository");
  DirectoryRepository repository(folder.path() / "data");
  EXPECT_EQ(repository.get("a"), std::nullopt);
  const std::string binary("\0\x01\xff payload", 11);
  repository.put("a", binary);
  EXPECT_EQ(repository.get("a"), binary);
  repository.put("a", "second");
  EXPECT_EQ(repository.get("a"), "second");
  EXPECT_TRUE(repository.erase("a"));
  EXPECT_FALSE(repository.erase("a"));
  EXPECT_EQ(repository.get("a"), std::nullopt);
}

TEST(DirectoryRepositoryTest, AnyIdIsAFileNameOfItsOwn) {
  svdserve::testing::TempFolder folder("repository");
  DirectoryRepository repository(folder.path());
  const std::vector<std::string> ids = {"../../etc/passwd", "/abs", std::string(1000, 'x'),
                                        "tenant/a b", ".", ""};
  for (const std::string& id : ids) repository.put(id, "v:" + id);
  for (const std::string& id : ids) EXPECT_EQ(repository.get(id), "v:" + id);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path())) {
    EXPECT_EQ(entry.path().parent_path(), folder.path());
    EXPECT_EQ(entry.path().filename().string().size(), 64u + 5u);  // sha256 hex + ".svdf"
    ++files;
  }
  EXPECT_EQ(files, ids.size());
}

TEST(DirectoryRepositoryTest, ScanSeesEveryEntryOnceAndNoTemporaries) {
  svdserve::testing::TempFolder folder("repository");
  DirectoryRepository repository(folder.path());
  repository.put("one", std::string(3000, '1'));
  repository.put("two", "22");
  // What a writer killed before its rename leaves behind.
  std::ofstream(folder.path() / (DirectoryRepository::file_name("three") + ".tmp.1.0")) << "torn";
  std::map<uint64_t, std::string> seen;  // by size
  repository.scan(100, [&](const RepositoryEntryHead& entry) {
    seen.emplace(entry.total_bytes, std::string(entry.head));
    EXPECT_GT(entry.written_unix_ms, 0);
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.at(3000), std::string(100, '1'));
  EXPECT_EQ(seen.at(2), "22");
}

TEST(DirectoryRepositoryTest, StaleTemporariesAreRemovedAtOpenFreshOnesKept) {
  svdserve::testing::TempFolder folder("repository");
  const auto stale = folder.path() / "abc.svdf.tmp.1.0";
  const auto fresh = folder.path() / "abc.svdf.tmp.2.0";
  std::ofstream(stale) << "x";
  std::ofstream(fresh) << "x";
  const utimbuf two_hours_ago{time(nullptr) - 7200, time(nullptr) - 7200};
  ASSERT_EQ(utime(stale.c_str(), &two_hours_ago), 0);
  DirectoryRepository repository(folder.path());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));  // perhaps another server's write in progress
}

TEST(DirectoryRepositoryTest, AFolderThatCannotBeMadeIsRefusedAtStart) {
  svdserve::testing::TempFolder folder("repository");
  std::ofstream(folder.path() / "file") << "x";
  EXPECT_THROW(DirectoryRepository(folder.path() / "file" / "data"), InvalidArgument);
}

}  // namespace
}  // namespace svdserve
