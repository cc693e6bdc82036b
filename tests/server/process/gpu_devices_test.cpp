#include "server/process/gpu_devices.hpp"

#include <gtest/gtest.h>

#include "kernels/errors.hpp"
#include "server/process/config.hpp"
#include "server/process/flags.hpp"

namespace svdserve {
namespace {

TEST(GpuDevices, AllOrAListOfOrdinals) {
  EXPECT_EQ(parse_gpu_devices("all"), std::nullopt);
  EXPECT_EQ(parse_gpu_devices(""), std::nullopt);
  EXPECT_EQ(parse_gpu_devices("1"), (std::vector<int>{1}));
  EXPECT_EQ(parse_gpu_devices("2,0,3"), (std::vector<int>{2, 0, 3}));
}

TEST(GpuDevices, AnythingElseIsRefusedSayingWhy) {
  for (const char* text : {"0,", ",1", "a", "-1", "64", "0,,1", "1 ,2", "0x1"}) {
    EXPECT_THROW((void)parse_gpu_devices(text), InvalidArgument) << text;
  }
  try {
    (void)parse_gpu_devices("0,1,0");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("names device 0 twice"), std::string::npos) << e.what();
  }
}

TEST(GpuDevices, ConfigDefaultsToAllAndKeepsAnOldSingleDevice) {
  v1::ServerConfig config;
  apply_defaults(config);
  EXPECT_EQ(config.gpu_devices(), "all");
  v1::ServerConfig old;
  old.set_gpu_device(2);
  apply_defaults(old);
  EXPECT_EQ(old.gpu_devices(), "2");
  v1::ServerConfig bad;
  bad.set_gpu_devices("0,0");
  apply_defaults(bad);
  EXPECT_THROW(validate(bad), InvalidArgument);
}

TEST(GpuDevices, TheFlagSetsTheConfig) {
  v1::ServerConfig config;
  char program[] = "svdserve";
  char flag[] = "--gpu-devices";
  char value[] = "0,1";
  char* argv[] = {program, flag, value};
  apply_overrides(parse_command_line(3, argv), config);
  EXPECT_EQ(config.gpu_devices(), "0,1");
}

}  // namespace
}  // namespace svdserve
