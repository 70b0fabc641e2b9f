// Loads a test case in ONNX's node-test layout (model.onnx + test_data_set_*/input_K.pb,
// output_K.pb) and compares outputs with numpy allclose semantics.
#ifndef QFUSE_TESTS_TESTING_ONNX_TEST_CASE_H_
#define QFUSE_TESTS_TESTING_ONNX_TEST_CASE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/model.h"
#include "runtime/executor.h"

namespace qfuse::testing {

struct OnnxTestCase {
  std::string dir;
  ir::Model model;
  std::vector<ir::NamedTensor> inputs;    // bound to the graph inputs by position
  std::vector<ir::NamedTensor> expected;  // graph outputs, in order
};

// Loads `dir`/model.onnx and `dir`/test_data_set_0. Import refusals are returned as is.
absl::StatusOr<OnnxTestCase> LoadOnnxTestCase(const std::string& dir);

// OK when every output matches: same dtype and shape; floats |a-e| <= atol + rtol*|e|
// (NaN matches NaN); integers and bools exactly. Otherwise names the output, the first
// mismatching index and both values, and the max abs difference.
absl::Status CompareOutputs(const std::vector<ir::NamedTensor>& expected,
                            const std::vector<ir::NamedTensor>& actual, double rtol, double atol);

// Max |a - e| over all float elements of matching outputs (shapes must agree).
double MaxAbsDifference(const ir::Tensor& expected, const ir::Tensor& actual);

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_ONNX_TEST_CASE_H_
