// The shared data flags: their defaults are data::DataSource's, each reader flag reaches the
// sources and a bad value is refused naming the flag; "name:path" values resolve against the
// user's folder; only the bundled samples have default calibration data; an old flag name
// works as an alias of its new one, but not both at once.
#include "tools/data_flags.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/internal/private_handle_accessor.h"
#include "absl/flags/reflection.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tools/flag_util.h"

ABSL_FLAG(int, new_name, 1, "a flag with an alias");
ABSL_FLAG(int, old_name, 1, "alias of --new_name");

namespace qfuse::tools {
namespace {

// Sets --name=value as the command line does (so IsFlagSet sees it); an absl::FlagSaver undoes it.
void Give(const char* name, const std::string& value) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  ASSERT_NE(flag, nullptr) << name;
  std::string error;
  ASSERT_TRUE(absl::flags_internal::PrivateHandleAccessor::ParseFrom(
      *flag, value, absl::flags_internal::SET_FLAGS_VALUE, absl::flags_internal::kCommandLine, error))
      << name << ": " << error;
}

TEST(DataFlagsTest, DefaultsAreDataSourceDefaults) {
  QFUSE_ASSERT_OK_AND_ASSIGN(data::DataSource d, ReaderDefaultsFromFlags());
  const data::DataSource expected;
  EXPECT_EQ(d.format, expected.format);
  EXPECT_TRUE(d.raw_shape.empty());
  EXPECT_EQ(d.idx_scale, expected.idx_scale);  // float(1.0 / 255) == 1.f / 255, bit for bit
  EXPECT_EQ(d.image.scale, expected.image.scale);
  EXPECT_EQ(d.image.color, expected.image.color);
  EXPECT_EQ(d.image.layout, expected.image.layout);
  EXPECT_EQ(d.image.resize_shorter, 0);
  EXPECT_EQ(d.image.center_crop, 0);
  EXPECT_TRUE(d.image.mean.empty());
  EXPECT_TRUE(d.image.std.empty());
}

TEST(DataFlagsTest, EveryReaderFlagReachesTheSources) {
  absl::FlagSaver saver;
  Give("data_format", "raw");
  Give("raw_shape", "3,8,8");
  Give("idx_scale", "0.5");
  Give("image_resize_shorter", "40");
  Give("image_center_crop", "32");
  Give("image_color", "bgr");
  Give("image_mean", "0.5,0.25,0.125");
  Give("image_std", "2,4,8");
  Give("image_scale", "0.25");
  Give("image_layout", "nhwc");
  QFUSE_ASSERT_OK_AND_ASSIGN(data::DataSource d, ReaderDefaultsFromFlags());
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<data::DataSource> sources, DataSourcesFromValues({"/d/x.raw"}, d));
  ASSERT_EQ(sources.size(), 1u);
  const data::DataSource& s = sources[0];
  EXPECT_EQ(s.path, "/d/x.raw");
  EXPECT_EQ(s.format, data::DataFormat::kRawFloat32);
  EXPECT_EQ(s.raw_shape, (std::vector<int64_t>{3, 8, 8}));
  EXPECT_EQ(s.idx_scale, 0.5f);
  EXPECT_EQ(s.image.resize_shorter, 40);
  EXPECT_EQ(s.image.center_crop, 32);
  EXPECT_EQ(s.image.color, data::ImagePreprocess::Color::kBgr);
  EXPECT_EQ(s.image.mean, (std::vector<float>{0.5f, 0.25f, 0.125f}));
  EXPECT_EQ(s.image.std, (std::vector<float>{2, 4, 8}));
  EXPECT_EQ(s.image.scale, 0.25f);
  EXPECT_EQ(s.image.layout, data::ImagePreprocess::Layout::kNhwc);
}

TEST(DataFlagsTest, BadValuesNameTheFlag) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"raw_shape", "3,0"}, {"image_color", "cmyk"}, {"image_mean", "0.5,x"}, {"image_std", "y"},
      {"image_layout", "chw"}, {"data_format", "tiff"}};
  for (const auto& [name, value] : cases) {
    absl::FlagSaver saver;
    Give(name, value);
    absl::StatusOr<data::DataSource> d = ReaderDefaultsFromFlags();
    ASSERT_FALSE(d.ok()) << name;
    if (std::string(name) != "data_format") {
      EXPECT_NE(d.status().message().find(std::string("--") + name), std::string::npos) << d.status();
    }
  }
}

TEST(DataFlagsTest, NamedValuesResolveTheirPathAgainstTheUsersFolder) {
  setenv("BUILD_WORKING_DIRECTORY", "/home/user", 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<data::DataSource> sources,
                             DataSourcesFromValues({"ids:data/ids.npy", "mask:/abs/mask.npy"}, {}));
  unsetenv("BUILD_WORKING_DIRECTORY");
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0].input_name, "ids");
  EXPECT_EQ(sources[0].path, "/home/user/data/ids.npy");
  EXPECT_EQ(sources[1].input_name, "mask");
  EXPECT_EQ(sources[1].path, "/abs/mask.npy");
}

TEST(DataFlagsTest, OnlyBundledSamplesHaveDefaultCalibrationData) {
  EXPECT_FALSE(IsBundledSample("/nonexistent/model.onnx"));
  absl::StatusOr<std::vector<data::DataSource>> none = CalibrationSources("/nonexistent/model.onnx", {}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "/nonexistent/model.onnx: --calib_data is required (only the bundled samples have default data)");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<data::DataSource> given,
                             CalibrationSources("/nonexistent/model.onnx", {"/d/x.npy"}, {}));
  ASSERT_EQ(given.size(), 1u);
  EXPECT_EQ(given[0].path, "/d/x.npy");
}

TEST(FlagUtilTest, AliasGivesItsValueOnlyWhenAlone) {
  absl::FlagSaver saver;
  QFUSE_ASSERT_OK_AND_ASSIGN(int neither, GetFlagOrAlias(FLAGS_new_name, FLAGS_old_name));
  EXPECT_EQ(neither, 1);
  EXPECT_FALSE(IsFlagSet(FLAGS_old_name));
  Give("old_name", "7");
  EXPECT_TRUE(IsFlagSet(FLAGS_old_name));
  QFUSE_ASSERT_OK_AND_ASSIGN(int by_alias, GetFlagOrAlias(FLAGS_new_name, FLAGS_old_name));
  EXPECT_EQ(by_alias, 7);
  Give("new_name", "3");
  absl::StatusOr<int> both = GetFlagOrAlias(FLAGS_new_name, FLAGS_old_name);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(), "--old_name is an alias of --new_name: give one");
}

}  // namespace
}  // namespace qfuse::tools
