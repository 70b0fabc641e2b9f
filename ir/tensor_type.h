// The static type of a graph value: element type, shape with symbolic/unknown dims,
// and (for quantized tensors) the quantization parameters that belong to it.
#ifndef QFUSE_IR_TENSOR_TYPE_H_
#define QFUSE_IR_TENSOR_TYPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/data_type.h"

namespace qfuse::ir {

// One dimension: a known size, a named symbolic size ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known.
  std::string symbol;  // non-empty for a named symbolic dim.

  static Dim Known(int64_t v) { return Dim{v, ""}; }
  static Dim Symbolic(std::string name) { return Dim{-1, std::move(name)}; }
  bool is_known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

// A shape whose rank may itself be unknown.
struct Shape {
  bool rank_known = false;
  std::vector<Dim> dims;

  static Shape Unknown() { return Shape{}; }
  static Shape FromDims(const std::vector<int64_t>& values);
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool fully_known() const;
  // Known dims; requires fully_known().
  std::vector<int64_t> KnownDims() const;
  std::string ToString() const;  // "[batch,1,28,28]", "[?,3]", or "?" for unknown rank.
  bool operator==(const Shape& o) const { return rank_known == o.rank_known && dims == o.dims; }
};

// Affine quantization: real = scale * (q - zero_point). Per-tensor when axis is
// unset (one scale); per-channel along `axis` otherwise (one scale per channel).
struct QuantParams {
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
  std::optional<int64_t> axis;

  bool per_channel() const { return axis.has_value(); }
  bool operator==(const QuantParams& o) const {
    return scales == o.scales && zero_points == o.zero_points && axis == o.axis;
  }
};

struct TensorType {
  DataType dtype = DataType::kUndefined;
  Shape shape;
  std::optional<QuantParams> quant;

  std::string ToString() const;  // "FLOAT[batch,10]"
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && shape == o.shape && quant == o.quant;
  }
};

}  // namespace qfuse::ir

#endif  // QFUSE_IR_TENSOR_TYPE_H_
