// The progress lines as a log (not a terminal) receives them: the final line's count, unit and
// rate; the unit names what is counted.
#include "calib/progress.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace qfuse::calib {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Written(std::FILE* f) {
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(c));
  return text;
}

TEST(ProgressBarTest, FinalLineCountsTheUnit) {
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  {
    ProgressBar bar("per-layer analysis full", 3, log, /*interactive=*/false);
    bar.set_unit("layers");
    for (int i = 0; i < 3; ++i) bar.Update(i + 1);
    bar.Finish();
  }
  const std::string text = Written(log);
  EXPECT_THAT(text, HasSubstr("per-layer analysis full: 3 layers in "));
  EXPECT_THAT(text, HasSubstr(" layers/s)\n"));
  EXPECT_THAT(text, Not(HasSubstr("samples")));
  std::fclose(log);
}

TEST(ProgressBarTest, SamplesByDefault) {
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  {
    ProgressBar bar("calibrate", 2, log, /*interactive=*/false);
    bar.Update(2);
    bar.Finish();
  }
  EXPECT_THAT(Written(log), HasSubstr("calibrate: 2 samples in "));
  std::fclose(log);
}

}  // namespace
}  // namespace qfuse::calib
