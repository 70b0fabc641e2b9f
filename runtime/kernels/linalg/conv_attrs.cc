#include "runtime/kernels/linalg/conv_attrs.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

absl::Status CheckPositive(const std::vector<int64_t>& values, const std::string& name) {
  for (int64_t v : values) {
    if (v < 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be positive, got [", absl::StrJoin(values, ","), "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConvAttrs> ParseConvAttrs(const ir::Node& node, bool transpose) {
  const ir::AttributeMap& a = node.attrs();
  ConvAttrs attrs;
  QFUSE_ASSIGN_OR_RETURN(attrs.kernel_shape, a.GetInts("kernel_shape", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.strides, a.GetInts("strides", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.dilations, a.GetInts("dilations", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.pads, a.GetInts("pads", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.group, a.GetInt("group", 1));
  QFUSE_ASSIGN_OR_RETURN(std::string auto_pad, a.GetString("auto_pad", "NOTSET"));
  if (transpose) {
    QFUSE_ASSIGN_OR_RETURN(attrs.output_padding, a.GetInts("output_padding", {}));
    QFUSE_ASSIGN_OR_RETURN(attrs.output_shape, a.GetInts("output_shape", {}));
  }
  if (auto_pad == "NOTSET") {
    attrs.auto_pad = AutoPad::kNotSet;
  } else if (auto_pad == "SAME_UPPER") {
    attrs.auto_pad = AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    attrs.auto_pad = AutoPad::kSameLower;
  } else if (auto_pad == "VALID") {
    attrs.auto_pad = AutoPad::kValid;
  } else {
    return absl::UnimplementedError(absl::StrCat("auto_pad '", auto_pad, "' is not supported"));
  }
  if (attrs.group < 1) return absl::InvalidArgumentError(absl::StrCat("group must be positive, got ", attrs.group));
  QFUSE_RETURN_IF_ERROR(CheckPositive(attrs.strides, "strides"));
  QFUSE_RETURN_IF_ERROR(CheckPositive(attrs.dilations, "dilations"));
  QFUSE_RETURN_IF_ERROR(CheckPositive(attrs.kernel_shape, "kernel_shape"));
  for (int64_t p : attrs.pads) {
    if (p < 0) return absl::UnimplementedError(absl::StrCat("negative pads [", absl::StrJoin(attrs.pads, ","), "]"));
  }
  if (attrs.pads.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("pads has an odd number of entries: ", attrs.pads.size()));
  }
  for (int64_t p : attrs.output_padding) {
    if (p < 0) return absl::InvalidArgumentError("output_padding must be non-negative");
  }
  // Bounded attributes keep every geometry sum and product (extent, padded size,
  // transposed output) far inside int64 for any input that fits in memory.
  constexpr int64_t kMaxAttribute = int64_t{1} << 31;
  for (const auto* list : {&attrs.kernel_shape, &attrs.strides, &attrs.dilations, &attrs.pads,
                           &attrs.output_padding, &attrs.output_shape}) {
    for (int64_t v : *list) {
      if (v > kMaxAttribute || v < -kMaxAttribute) {
        return absl::InvalidArgumentError(absl::StrCat("attribute value ", v, " is implausibly large (> 2^31)"));
      }
    }
  }
  return attrs;
}

}  // namespace qfuse::runtime::kernels::linalg
