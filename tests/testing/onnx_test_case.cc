#include "tests/testing/onnx_test_case.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"

namespace qfuse::testing {
namespace {

namespace fs = std::filesystem;

// Element i of a numeric tensor as double (16-bit floats decoded).
double ElementAsDouble(const ir::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case ir::DataType::kFloat32: return t.data<float>()[i];
    case ir::DataType::kFloat64: return t.data<double>()[i];
    case ir::DataType::kInt8: return t.data<int8_t>()[i];
    case ir::DataType::kUint8: return t.data<uint8_t>()[i];
    case ir::DataType::kInt16: return t.data<int16_t>()[i];
    case ir::DataType::kUint16: return t.data<uint16_t>()[i];
    case ir::DataType::kInt32: return t.data<int32_t>()[i];
    case ir::DataType::kUint32: return t.data<uint32_t>()[i];
    case ir::DataType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case ir::DataType::kUint64: return static_cast<double>(t.data<uint64_t>()[i]);
    case ir::DataType::kBool: return t.data<uint8_t>()[i];
    case ir::DataType::kFloat16: {
      const uint16_t h = t.data<uint16_t>()[i];
      const int exp = (h >> 10) & 0x1f;
      const int mant = h & 0x3ff;
      const double sign = (h & 0x8000) ? -1.0 : 1.0;
      if (exp == 0) return sign * std::ldexp(mant, -24);
      if (exp == 31) return mant ? NAN : sign * INFINITY;
      return sign * std::ldexp(mant + 1024, exp - 25);
    }
    case ir::DataType::kBFloat16: {
      const uint32_t bits = static_cast<uint32_t>(t.data<uint16_t>()[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      return f;
    }
    case ir::DataType::kUndefined: return 0;
  }
  return 0;
}

bool IsFloat(ir::DataType t) {
  return t == ir::DataType::kFloat32 || t == ir::DataType::kFloat64 || t == ir::DataType::kFloat16 ||
         t == ir::DataType::kBFloat16;
}

}  // namespace

absl::StatusOr<OnnxTestCase> LoadOnnxTestCase(const std::string& dir) {
  OnnxTestCase tc;
  tc.dir = dir;
  QFUSE_ASSIGN_OR_RETURN(tc.model, ir::LoadModel(dir + "/model.onnx"));
  const std::string data = dir + "/test_data_set_0";
  const auto& graph_inputs = tc.model.graph->inputs();
  for (size_t k = 0;; ++k) {
    const std::string path = absl::StrCat(data, "/input_", k, ".pb");
    if (!fs::exists(path)) break;
    if (k >= graph_inputs.size()) return absl::InvalidArgumentError(absl::StrCat(path, ": more inputs than the graph"));
    QFUSE_ASSIGN_OR_RETURN(ir::NamedTensor t, ir::ReadTensorFile(path));
    const ir::DataType want = graph_inputs[k]->type().dtype;
    if (want == ir::DataType::kBFloat16 && t.tensor.dtype() == ir::DataType::kUint16) t.tensor.ReinterpretAs(want);
    tc.inputs.push_back({graph_inputs[k]->name(), std::move(t.tensor)});
  }
  const auto& graph_outputs = tc.model.graph->outputs();
  for (size_t k = 0; k < graph_outputs.size(); ++k) {
    const std::string path = absl::StrCat(data, "/output_", k, ".pb");
    QFUSE_ASSIGN_OR_RETURN(ir::NamedTensor t, ir::ReadTensorFile(path));
    const ir::DataType want = graph_outputs[k]->type().dtype;
    if (want == ir::DataType::kBFloat16 && t.tensor.dtype() == ir::DataType::kUint16) t.tensor.ReinterpretAs(want);
    tc.expected.push_back({graph_outputs[k]->name(), std::move(t.tensor)});
  }
  return tc;
}

double MaxAbsDifference(const ir::Tensor& expected, const ir::Tensor& actual) {
  double worst = 0;
  for (int64_t i = 0; i < expected.num_elements() && i < actual.num_elements(); ++i) {
    worst = std::max(worst, std::fabs(ElementAsDouble(expected, i) - ElementAsDouble(actual, i)));
  }
  return worst;
}

absl::Status CompareOutputs(const std::vector<ir::NamedTensor>& expected,
                            const std::vector<ir::NamedTensor>& actual, double rtol, double atol) {
  if (expected.size() != actual.size()) {
    return absl::FailedPreconditionError(absl::StrCat("expected ", expected.size(), " outputs, got ", actual.size()));
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    const ir::Tensor& e = expected[k].tensor;
    const ir::Tensor& a = actual[k].tensor;
    const std::string name = expected[k].name;
    if (e.dtype() != a.dtype()) {
      return absl::FailedPreconditionError(absl::StrCat("output '", name, "': dtype ", ir::DataTypeName(a.dtype()),
                                                        ", expected ", ir::DataTypeName(e.dtype())));
    }
    if (e.dims() != a.dims()) {
      return absl::FailedPreconditionError(absl::StrCat("output '", name, "': shape ", ir::DimsToString(a.dims()),
                                                        ", expected ", ir::DimsToString(e.dims())));
    }
    const bool is_float = IsFloat(e.dtype());
    for (int64_t i = 0; i < e.num_elements(); ++i) {
      const double ev = ElementAsDouble(e, i);
      const double av = ElementAsDouble(a, i);
      bool ok;
      if (is_float) {
        ok = (std::isnan(ev) && std::isnan(av)) || (std::isinf(ev) && ev == av) ||
             std::fabs(av - ev) <= atol + rtol * std::fabs(ev);
      } else {
        ok = ev == av;
      }
      if (!ok) {
        return absl::FailedPreconditionError(absl::StrCat("output '", name, "'[", i, "] = ", av, ", expected ", ev,
                                                          " (max abs diff ", MaxAbsDifference(e, a), ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace qfuse::testing
