#include "pipeline/evaluation.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::pipeline {
namespace {

ir::Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& values) {
  return ir::Tensor::FromVector<float>(std::move(dims), values);
}

// 21 values (every partial sum and a tail of 5): SQNR and cosine against a plain loop in long
// double; the one-pass form gives SqnrDb's and Cosine's values exactly.
TEST(SqnrDbTest, EveryValueCounts) {
  std::vector<float> reference, actual;
  long double signal = 0, noise = 0, dot = 0, actual_norm = 0;
  for (int i = 0; i < 21; ++i) {
    reference.push_back(static_cast<float>(i + 1));
    actual.push_back(static_cast<float>(i + 1) + 0.5f * static_cast<float>(i % 3 - 1) + (i == 20 ? 3.0f : 0.0f));
    const long double r = reference.back(), x = actual.back();
    signal += r * r;
    noise += (r - x) * (r - x);
    dot += r * x;
    actual_norm += x * x;
  }
  const double sqnr = SqnrDb(reference, actual), cosine = Cosine(reference, actual);
  EXPECT_NEAR(sqnr, static_cast<double>(10 * std::log10(signal / noise)), 1e-12);
  EXPECT_NEAR(cosine, static_cast<double>(dot / std::sqrt(signal * actual_norm)), 1e-15);
  double both_sqnr = 0, both_cosine = 0;
  SqnrAndCosine(reference, actual, &both_sqnr, &both_cosine);
  EXPECT_EQ(both_sqnr, sqnr);
  EXPECT_EQ(both_cosine, cosine);
  // Spans of different sizes are a caller's error: NaN, not the figures of a truncation.
  const std::vector<float> shorter(reference.begin(), reference.end() - 1);
  EXPECT_TRUE(std::isnan(SqnrDb(reference, shorter)));
  EXPECT_TRUE(std::isnan(Cosine(shorter, reference)));
  // One sample: its own SQNR is the pooled one, bit for bit (the same sums).
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputAgreement one, CompareOutputs(Floats({1, 21}, reference), Floats({1, 21}, actual)));
  EXPECT_EQ(one.median_sample_sqnr_db, one.sqnr_db);
  EXPECT_EQ(one.worst_sample_sqnr_db, one.sqnr_db);
}

// Four samples of two values; sample 3's output is 10x the others' and its error 50x:
// per sample SQNR 20, 20, 20 and 10 log10(100 / 25) dB, hand-computed.
TEST(CompareOutputsTest, PerSampleNumbersAreHandComputed) {
  const ir::Tensor reference = Floats({4, 2}, {1, 0, 0, 2, 3, 0, 0, 10});
  const ir::Tensor actual = Floats({4, 2}, {1.1f, 0, 0, 2.2f, 3.3f, 0, 0, 5});
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputAgreement a, CompareOutputs(reference, actual));
  // Errors in float: 1.1f - 1 etc. are not exactly 0.1, so the expectations use the same floats.
  const double e0 = 1.1f - 1.0, e1 = 2.2f - 2.0, e2 = 3.3f - 3.0, e3 = 5.0;
  const double total = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3;
  EXPECT_NEAR(a.sqnr_db, 10 * std::log10(114.0 / total), 1e-9);
  EXPECT_EQ(a.samples, 4);
  EXPECT_EQ(a.worst_sample, 3);
  EXPECT_NEAR(a.worst_sample_sqnr_db, 10 * std::log10(100.0 / 25.0), 1e-9);
  EXPECT_NEAR(a.worst_sample_error_share, 25.0 / total, 1e-12);
  // Median of four: the mean of the two middle values, both 20 dB up to the float errors.
  const double s1 = 10 * std::log10(1.0 / (e0 * e0)), s2 = 10 * std::log10(4.0 / (e1 * e1)),
               s3 = 10 * std::log10(9.0 / (e2 * e2));
  std::vector<double> three = {s1, s2, s3};
  std::sort(three.begin(), three.end());
  EXPECT_NEAR(a.median_sample_sqnr_db, 0.5 * (three[0] + three[1]), 1e-9);
  EXPECT_NEAR(a.median_sample_sqnr_db, 20, 1e-5);
  EXPECT_TRUE(DominatedByOneSample(a));
}

TEST(CompareOutputsTest, EvenErrorsAreNotDominatedByOneSample) {
  const ir::Tensor reference = Floats({4, 1}, {1, 2, 3, 4});
  const ir::Tensor actual = Floats({4, 1}, {1.5f, 2.5f, 3.5f, 4.5f});
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputAgreement a, CompareOutputs(reference, actual));
  EXPECT_NEAR(a.worst_sample_error_share, 0.25, 1e-12);
  EXPECT_EQ(a.worst_sample, 0);  // the first of equal errors
  EXPECT_NEAR(a.worst_sample_sqnr_db, 10 * std::log10(1 / 0.25), 1e-9);
  // Per sample 10 log10(x^2 / 0.25) for x = 1..4: median of the middle two (x = 2, 3).
  EXPECT_NEAR(a.median_sample_sqnr_db, 0.5 * (10 * std::log10(16.0) + 10 * std::log10(36.0)), 1e-9);
  EXPECT_FALSE(DominatedByOneSample(a));
}

TEST(CompareOutputsTest, ThreeSamplesAreTooFewToCallOneDominant) {
  const ir::Tensor reference = Floats({3}, {1, 1, 1});
  const ir::Tensor actual = Floats({3}, {1, 1, 2});
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputAgreement a, CompareOutputs(reference, actual));
  EXPECT_EQ(a.worst_sample, 2);
  EXPECT_DOUBLE_EQ(a.worst_sample_error_share, 1.0);
  EXPECT_TRUE(std::isinf(a.median_sample_sqnr_db));  // two of three samples are exact: median +inf
  EXPECT_FALSE(DominatedByOneSample(a));
}

TEST(CompareOutputsTest, IdenticalOutputsHaveNoWorstShare) {
  const ir::Tensor reference = Floats({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputAgreement a, CompareOutputs(reference, reference));
  EXPECT_EQ(a.worst_sample_error_share, 0);
  EXPECT_TRUE(std::isinf(a.median_sample_sqnr_db));
  EXPECT_FALSE(DominatedByOneSample(a));
}

}  // namespace
}  // namespace qfuse::pipeline
