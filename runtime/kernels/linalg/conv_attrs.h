// Conv / ConvTranspose attributes, parsed and validated once when a kernel is made: shared by
// the float, integer and oneDNN convolution kernels.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_CONV_ATTRS_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_CONV_ATTRS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qfuse::runtime::kernels::linalg {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct ConvAttrs {
  // Empty vectors mean "absent" (defaults depend on the spatial rank, known at Run).
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;            // [begin..., end...]
  std::vector<int64_t> output_padding;  // ConvTranspose only
  std::vector<int64_t> output_shape;    // ConvTranspose only (spatial dims)
  int64_t group = 1;
  AutoPad auto_pad = AutoPad::kNotSet;
};

// Reads and validates the attributes of a Conv (transpose = false) or ConvTranspose.
absl::StatusOr<ConvAttrs> ParseConvAttrs(const ir::Node& node, bool transpose);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_CONV_ATTRS_H_
