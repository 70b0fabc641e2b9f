// Which activations the QDQ converter quantizes with another value's calibrated range instead
// of their own, so that the int8 op between them only moves bytes and each value rounds once:
// the inputs of an int8 Concat that only it reads take the Concat output's range (PyTorch FX
// shares one observer across a cat, TensorRT gives a concatenation's inputs its scale).
//
// Not a MaxPool's input, though quantizing commutes with the maximum (only the pooled values
// reach the next op): the MaxPool output's own threshold, fitted to the pooled values, was
// tried and lost 0.8 dB on the trained Fashion-MNIST ResNet-18 (2000 images; docs/zoo.md),
// gaining only where one image exceeds the calibration range (SqueezeNet), as headroom does.
#ifndef QFUSE_QUANT_SHARED_RANGES_H_
#define QFUSE_QUANT_SHARED_RANGES_H_

#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "calib/calibration_table.h"
#include "ir/graph.h"
#include "ir/value_sign.h"

namespace qfuse::quant {

// What the planning reads from the converter.
struct RangeSharingContext {
  const calib::CalibrationTable* table = nullptr;
  // Values on a lower-bounded grid (empty when grids do not follow lower bounds): a value shares
  // a range only with one of the same bound, so that no zero point moves.
  const ir::ValueLowerBounds* lower_bounds = nullptr;
  // Whether a node is an op of the int8 model (has an int8 form and is not kept float).
  std::function<bool(const ir::Node*)> runs_int8;
  // Whether a value is an activation to quantize (not computed from shapes and constants).
  std::function<bool(const ir::Value*)> is_activation;
  // Whether a node's outputs are kept float by the user (--keep_float).
  std::function<bool(const ir::Node*)> kept_float;
  // uint8 activations whose zero point follows the observed sign (activation type uint8): a
  // value shares only a range whose observed sign is its own.
  bool observed_sign_grids = false;
  // The Concat rule (off for target onnxruntime, whose Relu / Clip fusion into QLinearConv needs
  // each branch's own zero-based grid; onnxruntime's QLinearConcat requantizes each input).
  bool share_concat_ranges = true;
};

// value -> the value whose calibrated range it takes.
using SharedRanges = absl::flat_hash_map<const ir::Value*, const ir::Value*>;

// `order`: the graph's nodes in topological order.
SharedRanges PlanSharedRanges(const std::vector<ir::Node*>& order, const RangeSharingContext& context);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_SHARED_RANGES_H_
