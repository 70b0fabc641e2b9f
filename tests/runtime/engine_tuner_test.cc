// EngineTuner's schedule and choice, with times given by the test: the warm-up call of each
// engine is not timed, the timed calls interleave, the least minimum wins, each shape is
// tuned on its own, and a failed call (infinite time) loses.
#include "runtime/engine_tuner.h"

#include <functional>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace qfuse::runtime {
namespace {

const std::vector<int64_t> kShape = {8, 16, 28, 28};

// Runs `tuner` at `shape` until it has chosen, each call of engine e taking times[e][k] on its
// k-th call; returns the engines in call order.
std::vector<int> Tune(EngineTuner& tuner, const std::vector<int64_t>& shape,
                      const std::vector<std::vector<double>>& times) {
  std::vector<int> order;
  std::vector<size_t> used(times.size(), 0);
  while (tuner.Chosen(shape) < 0 && order.size() < 100) {
    const int e = tuner.Next(shape);
    order.push_back(e);
    tuner.Record(shape, e, times[e][used[e]++]);
  }
  return order;
}

TEST(EngineTunerTest, InterleavesWarmUpAndTrialsThenKeepsTheFastest) {
  EngineTuner tuner("conv", {"onednn", "tiles"});
  // The warm-up calls (first of each) are slow and must not count; tiles' best timed call
  // (2.0) beats oneDNN's best (2.5) although oneDNN's warm-up was faster.
  const std::vector<int> order = Tune(tuner, kShape, {{1.0, 2.5, 3.0}, {9.0, 4.0, 2.0}});
  EXPECT_EQ(order, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(static_cast<int>(order.size()), EngineTuner::CallsToChoose(2));
  EXPECT_EQ(tuner.Chosen(kShape), 1);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(tuner.Next(kShape), 1);
  // Once chosen, later records change nothing.
  tuner.Record(kShape, 1, 100.0);
  EXPECT_EQ(tuner.Chosen(kShape), 1);
}

TEST(EngineTunerTest, UsesTheMinimumNotTheMean) {
  EngineTuner tuner("conv", {"a", "b"});
  // a: one slow outlier (10) and one fast call (1); b: steady 2. Least minimum: a.
  Tune(tuner, kShape, {{5.0, 10.0, 1.0}, {5.0, 2.0, 2.0}});
  EXPECT_EQ(tuner.Chosen(kShape), 0);
}

TEST(EngineTunerTest, EachShapeIsTunedOnItsOwn) {
  EngineTuner tuner("conv", {"a", "b"});
  const std::vector<int64_t> other = {1, 16, 28, 28};
  Tune(tuner, kShape, {{1.0, 1.0, 1.0}, {1.0, 3.0, 3.0}});
  EXPECT_EQ(tuner.Chosen(kShape), 0);
  EXPECT_EQ(tuner.Chosen(other), -1);
  EXPECT_EQ(tuner.Next(other), 0);  // measuring again from the start
  Tune(tuner, other, {{1.0, 3.0, 3.0}, {1.0, 1.0, 1.0}});
  EXPECT_EQ(tuner.Chosen(other), 1);
  EXPECT_EQ(tuner.Chosen(kShape), 0);
  EXPECT_TRUE(tuner.AnyChose(0));
  EXPECT_TRUE(tuner.AnyChose(1));
}

TEST(EngineTunerTest, AnyChoseSeesOnlyFinishedChoices) {
  EngineTuner tuner("conv", {"a", "b"});
  EXPECT_FALSE(tuner.AnyChose(0));
  tuner.Record(kShape, 0, 1.0);  // a warm-up: nothing chosen yet
  EXPECT_FALSE(tuner.AnyChose(0));
  Tune(tuner, kShape, {{1.0, 1.0}, {1.0, 2.0, 2.0}});
  EXPECT_TRUE(tuner.AnyChose(0));
  EXPECT_FALSE(tuner.AnyChose(1));
}

TEST(EngineTunerTest, AFailedEngineLoses) {
  EngineTuner tuner("conv", {"a", "b"});
  const double failed = std::numeric_limits<double>::infinity();
  Tune(tuner, kShape, {{failed, failed, failed}, {1.0, 7.0, 7.0}});
  EXPECT_EQ(tuner.Chosen(kShape), 1);
}

TEST(EngineTunerTest, MoreTrialsAndEngines) {
  EngineTuner tuner("conv", {"a", "b", "c"}, /*trials=*/3);
  const std::vector<int> order =
      Tune(tuner, kShape, {{0.1, 5.0, 5.0, 5.0}, {0.1, 4.0, 4.0, 4.0}, {0.1, 6.0, 3.0, 6.0}});
  EXPECT_EQ(static_cast<int>(order.size()), EngineTuner::CallsToChoose(3, 3));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(tuner.Chosen(kShape), 2);
}

TEST(EngineTunerTest, TimedRecordsCallsAndAFailureAsInfinitelySlow) {
  EngineTuner tuner("conv", {"a", "b"});
  int ran = 0;
  const auto ok = [&] {
    ++ran;
    return absl::OkStatus();
  };
  const auto fail = [&] {
    ++ran;
    return absl::InternalError("refused");
  };
  // Warm-ups, then two timed calls each: "a" always fails, so "b" wins however slow it is.
  for (int k = 0; k < EngineTuner::CallsToChoose(2); ++k) {
    const int e = tuner.Next(kShape);
    const absl::Status status = tuner.Timed(kShape, e, e == 0 ? std::function<absl::Status()>(fail) : ok);
    EXPECT_EQ(status.ok(), e == 1);
  }
  EXPECT_EQ(ran, EngineTuner::CallsToChoose(2));
  EXPECT_EQ(tuner.Chosen(kShape), 1);
}

TEST(EngineTunerTest, OneEngineNeedsNoTuning) {
  EngineTuner tuner("conv", {"only"});
  EXPECT_EQ(tuner.Next(kShape), 0);
}

}  // namespace
}  // namespace qfuse::runtime
