#include "server/process/address_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/errors.hpp"
#include "tests/client/temp_folder.hpp"

namespace svdserve {
namespace {

TEST(LocalClientAddress, AWildcardHostIsReachedOnLoopback) {
  EXPECT_EQ(local_client_address("0.0.0.0:0", 40001), "127.0.0.1:40001");
  EXPECT_EQ(local_client_address(":50051", 50051), "127.0.0.1:50051");
  EXPECT_EQ(local_client_address("[::]:0", 40002), "[::1]:40002");
  EXPECT_EQ(local_client_address("[::1]:0", 40003), "[::1]:40003");
  EXPECT_EQ(local_client_address("10.1.2.3:7000", 7000), "10.1.2.3:7000");
  EXPECT_EQ(local_client_address("unix:/run/svdserve.sock", 0), "unix:/run/svdserve.sock");
}

TEST(AddressFile, PublishReplacesTheContentAndWithdrawRemovesIt) {
  const testing::TempFolder folder("svdserve_address_file");
  const auto path = folder.path() / "address";
  AddressFile file(path.string());
  file.publish("127.0.0.1:1");
  file.publish("127.0.0.1:2");
  std::stringstream content;
  content << std::ifstream(path).rdbuf();
  EXPECT_EQ(content.str(), "127.0.0.1:2\n");
  file.withdraw();
  EXPECT_FALSE(std::filesystem::exists(path));
  file.withdraw();  // twice is fine
  file.publish("127.0.0.1:3");  // a start-up ending during the shutdown
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(AddressFile, AFolderThatIsNotThereIsAnError) {
  const testing::TempFolder folder("svdserve_address_file");
  AddressFile file((folder.path() / "no" / "address").string());
  EXPECT_THROW(file.publish("127.0.0.1:1"), Unavailable);
}

TEST(AddressFile, AFailedWriteLeavesNothingBehind) {
  const testing::TempFolder folder("svdserve_address_file");
  std::filesystem::create_directory(folder.path() / "address");  // rename onto a folder fails
  AddressFile file((folder.path() / "address").string());
  EXPECT_THROW(file.publish("127.0.0.1:1"), Unavailable);
  EXPECT_FALSE(std::filesystem::exists(folder.path() / "address.tmp"));
}

TEST(AddressFile, NoPathWritesNothing) {
  AddressFile file("");
  EXPECT_NO_THROW(file.publish("127.0.0.1:1"));
}

}  // namespace
}  // namespace svdserve
