#include "ir/tensor_type.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace qfuse::ir {

Shape Shape::FromDims(const std::vector<int64_t>& values) {
  Shape s;
  s.rank_known = true;
  for (int64_t v : values) s.dims.push_back(Dim::Known(v));
  return s;
}

bool Shape::fully_known() const {
  if (!rank_known) return false;
  for (const Dim& d : dims) {
    if (!d.is_known()) return false;
  }
  return true;
}

std::vector<int64_t> Shape::KnownDims() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.value);
  return out;
}

std::string Shape::ToString() const {
  if (!rank_known) return "?";
  return absl::StrCat("[",
                      absl::StrJoin(dims, ",",
                                    [](std::string* out, const Dim& d) {
                                      if (d.is_known()) {
                                        absl::StrAppend(out, d.value);
                                      } else {
                                        absl::StrAppend(out, d.symbol.empty() ? "?" : d.symbol);
                                      }
                                    }),
                      "]");
}

std::string TensorType::ToString() const {
  std::string s = absl::StrCat(DataTypeName(dtype), shape.ToString());
  if (quant.has_value()) {
    absl::StrAppend(&s, quant->per_channel() ? absl::StrCat("{per-channel axis=", *quant->axis, "}")
                                             : absl::StrCat("{scale=", quant->scales.empty() ? 0.f : quant->scales[0], "}"));
  }
  return s;
}

}  // namespace qfuse::ir
