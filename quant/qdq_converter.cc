#include "quant/qdq_converter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "ir/int8_forms.h"
#include "ir/value_sign.h"
#include "numerics/requantize.h"
#include "numerics/threshold_scale.h"
#include "quant/integer_heads.h"
#include "quant/placement_check.h"
#include "quant/shared_ranges.h"
#include "quant/weight_quantizer.h"

namespace qfuse::quant {
namespace {

using ir::DataType;
using ir::Node;
using ir::QuantParams;
using ir::Tensor;
using ir::Value;

bool Is(const Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

// Average pools take their output scale from their input, not from the table: a mean never
// leaves its inputs' range, so it never clips where the input did not, while a threshold
// calibrated on the means themselves clips every image whose features exceed the calibration
// set's (DenseNet-121's classifier input: calibrated up to 2.9, held-out images up to 12.8).
// The scale is the input's times (1 + 2^-8), not equal to it: with equal scales a mean of N
// integers lands exactly on a rounding tie for 1 in N outputs (N even), and a runtime that
// averages in float (onnxruntime's DequantizeLinear -> GlobalAveragePool -> QuantizeLinear)
// breaks those ties by its float error, not as the exact integer kernel does.
constexpr float kAveragePoolScaleMargin = 1.f + 1.f / 256;

// The base op whose weights are quantized (nullopt when `n` has no quantizable weights).
std::optional<ir::UnitBaseOp> WeightOp(const Node& n) {
  if (ir::IsUnit(n)) {
    absl::StatusOr<ir::UnitSpec> spec = ir::ReadUnitSpec(n);
    return spec.ok() ? std::optional<ir::UnitBaseOp>(spec->base_op) : std::nullopt;
  }
  return ir::UnitBaseOpOf(n);
}

class Converter {
 public:
  Converter(ir::Model* model, const calib::CalibrationTable& table, const ConvertOptions& options)
      : graph_(*model->graph), table_(table), options_(options) {}

  absl::StatusOr<ConversionStats> Run() {
    QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph_.TopologicalOrder());
    // Values computed only from tensor shapes and constants (Shape -> Cast -> Div -> Concat
    // feeding an opset-9 Upsample's scales) are not activations: quantizing them changes
    // output sizes. They stay float.
    for (const Node* node : order) {
      bool from_shapes = Is(*node, "Shape");
      if (!from_shapes) {
        bool any_input = false;
        from_shapes = true;
        for (const Value* in : node->inputs()) {
          if (in == nullptr) continue;
          any_input = true;
          from_shapes = from_shapes && (in->is_constant() || shape_derived_.contains(in));
        }
        from_shapes = from_shapes && any_input;
      }
      if (!from_shapes) continue;
      for (const Value* out : node->outputs()) {
        if (out != nullptr) shape_derived_.insert(out);
      }
    }
    if (options_.int8_as_uint8 && options_.unsigned_non_negative) {
      QFUSE_ASSIGN_OR_RETURN(lower_bounds_,
                             options_.bounded_below ? ir::LowerBounds(graph_) : ir::NonNegativeValues(graph_));
    }
    MarkFloatPassThroughs(order);
    if (options_.target == DeployTarget::kOnnxRuntime) MarkAbsorbedClamps(order);
    RangeSharingContext sharing;
    sharing.table = &table_;
    sharing.lower_bounds = &lower_bounds_;
    sharing.runs_int8 = [this](const Node* n) { return RunsInt8(n); };
    sharing.is_activation = [this](const Value* v) { return !shape_derived_.contains(v); };
    sharing.kept_float = [this](const Node* n) { return options_.keep_float.count(n->name()) > 0; };
    sharing.observed_sign_grids = options_.activation_type == ActivationType::kUint8;
    sharing.share_concat_ranges = options_.target != DeployTarget::kOnnxRuntime;
    shared_range_ = PlanSharedRanges(order, sharing);
    for (Node* node : order) {
      if (options_.keep_float.count(node->name()) > 0) continue;
      if (node->outputs().size() == 1 && shape_derived_.contains(node->output(0))) continue;  // shape arithmetic
      const std::optional<ir::UnitBaseOp> weight_op = WeightOp(*node);
      if (weight_op.has_value()) QFUSE_RETURN_IF_ERROR(ReadConstantsThroughIdentity(node));
      const bool quantize_weights = weight_op.has_value() && node->input(1) != nullptr && node->input(1)->is_constant() &&
                                    node->input(1)->type().dtype == DataType::kFloat32 &&
                                    node->input(0) != nullptr && !node->input(0)->is_constant();
      std::optional<QuantizedWeights> weights;
      if (quantize_weights) {
        QFUSE_ASSIGN_OR_RETURN(weights, PlanWeights(*node, *weight_op));
        if (!weights.has_value()) {  // kept float: its bias cannot fit at an acceptable cost
          ++stats_.bias_float_layers;
          float_nodes_.insert(node);
          continue;
        }
      }
      if (!ir::HasInt8Form(*node) || float_pass_throughs_.contains(node)) ++stats_.float_ops;
      for (int i = 0; i < static_cast<int>(node->inputs().size()); ++i) {
        Value* in = node->input(i);
        if (in == nullptr || in->is_constant() || in->type().dtype != DataType::kFloat32) continue;
        if (shape_derived_.contains(in)) continue;
        if (quantize_weights && (i == ir::kUnitW || i == ir::kUnitBias)) continue;
        if (absorbed_clamps_.contains(node)) continue;  // reads the Add's output unrounded
        // Between two float ops a Q/DQ pair would only add error: neither runtime runs either in int8.
        if (!RunsInt8(node) && !RunsInt8(in->producer())) continue;
        QFUSE_ASSIGN_OR_RETURN(Value * dq, Dequantized(in));
        graph_.SetInput(node, i, dq);
      }
      if (quantize_weights) QFUSE_RETURN_IF_ERROR(InsertWeights(node, std::move(*weights)));
    }
    MoveShapeReadersToQuantized();
    return stats_;
  }

 private:
  // Whether `n` is an op of the int8 model: it has an int8 form and is not kept float.
  bool RunsInt8(const Node* n) const {
    return n != nullptr && ir::HasInt8Form(*n) && options_.keep_float.count(n->name()) == 0 &&
           !float_nodes_.contains(n) && !float_pass_throughs_.contains(n) &&
           !(n->outputs().size() == 1 && shape_derived_.contains(n->output(0)));
  }

  // Exporters write Identity(initializer) where several nodes share one initializer (the
  // all-zero Conv biases of a randomly initialised EfficientNet share one): a weight or bias
  // read through such a chain is rewired to the constant itself, so that it is quantized as
  // any other (at `none`, where no pass removed the Identity, the bias stayed float and
  // onnxruntime ran that Conv in float; at `bn`/`full` RemoveIdentityPass had done the same).
  // Identity nodes left without readers are removed.
  absl::Status ReadConstantsThroughIdentity(Node* node) {
    for (int i : {ir::kUnitW, ir::kUnitBias}) {
      Value* in = i < static_cast<int>(node->inputs().size()) ? node->input(i) : nullptr;
      Value* source = in;
      while (source != nullptr && !source->is_constant() && source->producer() != nullptr &&
             Is(*source->producer(), "Identity")) {
        source = source->producer()->input(0);
      }
      if (source == in || source == nullptr || !source->is_constant()) continue;
      graph_.SetInput(node, i, source);
      for (Value* v = in; v != source && v->uses().empty() && !v->is_graph_output();) {
        Node* identity = v->producer();
        v = identity->input(0);
        // No set keeps a pointer that a node created later could reuse.
        for (auto* marks : {&float_nodes_, &float_pass_throughs_, &absorbed_clamps_}) marks->erase(identity);
        QFUSE_RETURN_IF_ERROR(graph_.RemoveNode(identity));
      }
    }
    return absl::OkStatus();
  }

  // A pass-through op (ir::IsInt8PassThrough) runs float when an int8 form would only add rounding:
  //  - no consumer runs int8: its output would be quantized for float readers only (a DenseNet
  //    Concat re-rounding every earlier feature map to a new common scale, once per layer);
  //  - a Relu/Clip whose input comes from a float op or the graph input: the value would be
  //    quantized before the clamp, spending levels on the values it removes (DenseNet's and
  //    pre-activation ResNets' BatchNormalization -> Relu).
  // Either way the one Q/DQ pair then sits where the value meets an int8 op. Decisions feed each
  // other (a float Relu can leave its producer Concat without int8 readers), so this iterates to a
  // fixed point; a node only ever moves to float, so it ends.
  void MarkFloatPassThroughs(const std::vector<Node*>& order) {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Node* node = *it;
        if (!ir::IsInt8PassThrough(*node) || !RunsInt8(node)) continue;
        bool int8_reader = false;
        for (const Value* out : node->outputs()) {
          if (out == nullptr) continue;
          for (const ir::Use& use : out->uses()) int8_reader = int8_reader || RunsInt8(use.node);
        }
        const bool clamp_of_float = ir::IsClamp(*node) && node->input(0) != nullptr &&
                                    !RunsInt8(node->input(0)->producer());
        if (!int8_reader || clamp_of_float) {
          float_pass_throughs_.insert(node);
          changed = true;
        }
      }
    }
  }

  // onnxruntime: a Relu/Clip reading the only output of an int8 Add runs on the unrounded sum,
  // as a unit's activation does, so onnxruntime fuses Add -> Relu -> QuantizeLinear (zero point 0
  // of uint8: the clamp is absorbed) into one QLinearAdd.
  void MarkAbsorbedClamps(const std::vector<Node*>& order) {
    for (Node* node : order) {
      if (!ir::IsClamp(*node) || !RunsInt8(node) || node->input(0) == nullptr) continue;
      const Value* sum = node->input(0);
      const Node* add = sum->producer();
      if (add != nullptr && Is(*add, "Add") && RunsInt8(add) && sum->uses().size() == 1 && !sum->is_graph_output()) {
        absorbed_clamps_.insert(node);
      }
    }
  }

  // Scale and zero point of the activation `v`: another value's (shared_ranges.h), the input's
  // for ops that keep or average it, or from the table.
  absl::StatusOr<QuantParams> ActivationParams(const Value& v) {
    if (auto shared = shared_range_.find(&v); shared != shared_range_.end()) {
      return ActivationParams(*shared->second);
    }
    const Node* producer = v.producer();
    if (producer != nullptr && options_.keep_float.count(producer->name()) == 0) {
      if (ir::KeepsInputQuantization(*producer) && producer->input(0) != nullptr) {
        auto it = params_.find(producer->input(0));
        if (it != params_.end()) return it->second;
      }
      if (ir::IsAveragePool(*producer) && producer->input(0) != nullptr) {
        auto it = params_.find(producer->input(0));
        if (it != params_.end()) {
          QuantParams pooled = it->second;
          pooled.scales[0] *= kAveragePoolScaleMargin;
          return pooled;
        }
      }
      if (Is(*producer, "Concat")) {
        std::optional<QuantParams> common;
        bool agree = true;
        for (const Value* in : producer->inputs()) {
          auto it = params_.find(in);
          if (it == params_.end() || (common.has_value() && !(*common == it->second))) {
            agree = false;
            break;
          }
          common = it->second;
        }
        if (agree && common.has_value()) return *common;
      }
    }
    const calib::TensorRange* range = table_.Find(v.name());
    if (range == nullptr) {
      return absl::NotFoundError(absl::StrCat("tensor '", v.name(),
                                              "' is not in the calibration table (was it made for another graph?)"));
    }
    // An all-zero tensor (threshold 0) gets scale 1: every value quantizes to exactly 0.
    QuantParams params;
    auto bound = lower_bounds_.find(&v);
    if (options_.activation_type == ActivationType::kInt8 && bound != lower_bounds_.end() && range->threshold > 0) {
      // [lo, T] on 256 levels, lo = max(L, -T) <= 0: zero point 0 and T / 255 when L = 0.
      const float lo = std::max(bound->second, -range->threshold);
      const float scale = numerics::ScaleOfThreshold(range->threshold - lo, numerics::kUint8Max);
      params.scales = {scale};
      params.zero_points = {static_cast<int32_t>(std::min(255.f, std::nearbyint(-lo / scale)))};
    } else if (options_.activation_type == ActivationType::kInt8 && bound != lower_bounds_.end()) {
      params.scales = {1.f};  // an all-zero tensor: exact at any scale
      params.zero_points = {0};
    } else if (options_.activation_type == ActivationType::kInt8) {
      params.scales = {range->threshold > 0 ? range->scale : 1.f};  // the table's scale, bit for bit
      params.zero_points = {options_.int8_as_uint8 ? 128 : 0};
    } else if (range->min >= 0) {
      params.scales = {numerics::ScaleOfThreshold(range->threshold, numerics::kUint8Max)};
      params.zero_points = {0};
    } else {
      params.scales = {numerics::ScaleOfThreshold(range->threshold, numerics::kInt8SymmetricMax)};
      params.zero_points = {128};
    }
    if (producer != nullptr && Is(*producer, "Softmax")) {
      // onnxruntime's QLinearSoftmax (its fusion of DQ -> Softmax -> Q) multiplies by
      // floor(1 / y_scale): a whole 1 / y_scale keeps it the graph's arithmetic. Softmax
      // outputs are >= 0, so every grid above has zero point 0 or 128 whatever the scale.
      params.scales[0] = numerics::ScaleWithWholeReciprocal(params.scales[0]);
    }
    return params;
  }

  // A Shape (or Size) reading a quantized float value reads its QuantizeLinear output instead,
  // which has the same shape: the float value's only reader is then the QuantizeLinear, as
  // onnxruntime's QDQ fusion requires of a group (a MultiheadAttention's output Gemm, whose
  // output a Shape also reads, otherwise runs in float there, in qfuse as an integer unit), and
  // neither runtime dequantizes a tensor only to read its shape.
  void MoveShapeReadersToQuantized() {
    for (const auto& [value, dequantized] : dequantized_) {
      Value* quantized = dequantized->producer()->input(0);
      std::vector<ir::Use> moves;
      for (const ir::Use& use : value->uses()) {
        if (Is(*use.node, "Shape") || Is(*use.node, "Size")) moves.push_back(use);
      }
      for (const ir::Use& use : moves) graph_.SetInput(use.node, use.input_index, quantized);
    }
  }

  // Activations are stored as UINT8: uint8 activations, or int8's grid shifted by 128.
  bool StoresUint8() const {
    return options_.activation_type == ActivationType::kUint8 || options_.int8_as_uint8;
  }

  // The DequantizeLinear output standing for `v` (one Q -> DQ pair per value).
  absl::StatusOr<Value*> Dequantized(Value* v) {
    auto it = dequantized_.find(v);
    if (it != dequantized_.end()) return it->second;
    QFUSE_ASSIGN_OR_RETURN(QuantParams params, ActivationParams(*v));
    const bool uint8 = StoresUint8();
    const DataType qtype = uint8 ? DataType::kUint8 : DataType::kInt8;
    QFUSE_ASSIGN_OR_RETURN(Value * scale, graph_.AddConstant(graph_.UniqueValueName(v->name() + "_scale"),
                                                             Tensor::Scalar<float>(params.scales[0])));
    Value* zero_point;
    if (uint8) {
      QFUSE_ASSIGN_OR_RETURN(zero_point, graph_.AddConstant(graph_.UniqueValueName(v->name() + "_zero_point"),
                                                            Tensor::Scalar<uint8_t>(params.zero_points[0])));
    } else {
      QFUSE_ASSIGN_OR_RETURN(zero_point, graph_.AddConstant(graph_.UniqueValueName(v->name() + "_zero_point"),
                                                            Tensor::Scalar<int8_t>(params.zero_points[0])));
    }
    QFUSE_ASSIGN_OR_RETURN(Node * q, graph_.AddNode("QuantizeLinear", v->name() + "_QuantizeLinear",
                                                    {v, scale, zero_point},
                                                    {graph_.UniqueValueName(v->name() + "_quantized")}));
    q->output(0)->mutable_type() = ir::TensorType{qtype, v->type().shape, params};
    QFUSE_ASSIGN_OR_RETURN(Node * dq, graph_.AddNode("DequantizeLinear", v->name() + "_DequantizeLinear",
                                                     {q->output(0), scale, zero_point},
                                                     {graph_.UniqueValueName(v->name() + "_dequantized")}));
    dq->output(0)->mutable_type() = v->type();
    params_[v] = params;
    params_[dq->output(0)] = params;
    dequantized_[v] = dq->output(0);
    ++stats_.quantized_activations;
    if (uint8 && params.zero_points[0] != 128) ++stats_.unsigned_activations;
    return dq->output(0);
  }

  // The node's quantized weights and bias, or nullopt when its bias fits beside the worst-case
  // accumulation only with an output error above options_.max_widened_output_error (kept float).
  absl::StatusOr<std::optional<QuantizedWeights>> PlanWeights(const Node& node, ir::UnitBaseOp op) {
    QFUSE_ASSIGN_OR_RETURN(QuantParams x_params, ActivationParams(*node.input(0)));
    const ir::Tensor& w_data = *node.input(1)->initializer();
    WeightQuantizeRequest request;
    request.weights = &w_data;
    // TensorRT quantizes the bias itself: it stays float, with no int32 budget to fit.
    request.bias = !tensorrt() && node.input(ir::kUnitBias) != nullptr && node.input(ir::kUnitBias)->is_constant()
                       ? node.input(ir::kUnitBias)->initializer()
                       : nullptr;
    request.input_scale = x_params.scales[0];
    request.per_channel = options_.per_channel_weights;
    request.reduce_range = options_.reduce_range;
    QFUSE_ASSIGN_OR_RETURN(request.channel_axis, ir::WeightOutputChannelAxis(op, node.attrs()));
    // TensorRT reads per-channel ConvTranspose scales on axis 0, its input channels: per tensor.
    if (tensorrt() && op == ir::UnitBaseOp::kConvTranspose) request.per_channel = false;
    QFUSE_ASSIGN_OR_RETURN(request.num_products, ProductsPerOutput(node, op, w_data));
    const bool uint8 = StoresUint8();
    request.max_abs_input = uint8 ? numerics::MaxAbsCentered(0, 255, x_params.zero_points[0])
                                  : numerics::MaxAbsCentered(-128, 127, x_params.zero_points[0]);
    QFUSE_ASSIGN_OR_RETURN(QuantizedWeights w, QuantizeWeightsAndBias(request));
    if (w.max_widening > 1) {
      const double cost = WideningCostDb(w.max_widening);
      const bool keep_float = !(w.widened_output_error <= options_.max_widened_output_error);
      stats_.notes.push_back(absl::StrCat(
          node.Describe(), ": bias does not fit beside K=", request.num_products, " products in int32; ",
          keep_float
              ? absl::StrCat("kept float (",
                             std::isfinite(w.widened_output_error)
                                 ? absl::StrFormat("wider weight scales could move the output by %.3g of its bias",
                                                   w.widened_output_error)
                                 : std::string("no weight scale makes the accumulator fit"),
                             " > ", absl::StrFormat("%.3g", options_.max_widened_output_error), ")")
              : absl::StrFormat("widened the weight scale of %d channel(s) by up to %.3gx (-%.1f dB weight SQNR; "
                                "the outputs, which their biases dominate, move by at most %.2g of the bias)",
                                w.widened_channels, w.max_widening, cost, w.widened_output_error)));
      if (keep_float) return std::optional<QuantizedWeights>();
    }
    return std::optional<QuantizedWeights>(std::move(w));
  }

  // K: products summed into one accumulator (an upper bound for ConvTranspose).
  static absl::StatusOr<int64_t> ProductsPerOutput(const Node& node, ir::UnitBaseOp op, const ir::Tensor& w) {
    const auto& d = w.dims();
    switch (op) {
      case ir::UnitBaseOp::kConv: {  // [Cout, Cin/g, k...]
        int64_t k = 1;
        for (size_t i = 1; i < d.size(); ++i) k *= d[i];
        return k;
      }
      case ir::UnitBaseOp::kConvTranspose: {  // [Cin, Cout/g, k...]
        QFUSE_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
        int64_t k = d[0] / std::max<int64_t>(group, 1);
        for (size_t i = 2; i < d.size(); ++i) k *= d[i];
        return k;
      }
      case ir::UnitBaseOp::kGemm: {
        QFUSE_ASSIGN_OR_RETURN(int64_t trans_b, node.attrs().GetInt("transB", 0));
        return d.size() == 2 ? d[trans_b ? 1 : 0] : 0;
      }
      case ir::UnitBaseOp::kMatMul: return d.size() >= 2 ? d[d.size() - 2] : 0;  // [..., K, N]
    }
    return 0;
  }

  absl::Status InsertWeights(Node* node, QuantizedWeights w) {
    stats_.widened_bias_channels += w.widened_channels;
    const std::string base = node->input(1)->name();
    if (tensorrt()) {
      QFUSE_ASSIGN_OR_RETURN(Value * wq, QuantizedFloatConstant(base, w));
      graph_.SetInput(node, ir::kUnitW, wq);
      ++stats_.quantized_weights;
      return absl::OkStatus();
    }
    QFUSE_ASSIGN_OR_RETURN(Value * wq, DequantizedConstant(base, std::move(w.weights), w.weight_scales,
                                                           Tensor(DataType::kInt8, {w.weight_scales.num_elements()}),
                                                           w.axis));
    graph_.SetInput(node, ir::kUnitW, wq);
    if (w.bias.num_elements() > 0) {
      const std::string bias_name = node->input(ir::kUnitBias)->name();
      QFUSE_ASSIGN_OR_RETURN(Value * bq, DequantizedConstant(bias_name, std::move(w.bias), w.bias_scales,
                                                             Tensor(DataType::kInt32, {w.bias_scales.num_elements()}),
                                                             0));
      graph_.SetInput(node, ir::kUnitBias, bq);
    }
    ++stats_.quantized_weights;
    return absl::OkStatus();
  }

  // TensorRT's weight form: the dequantized weights as a FLOAT constant -> QuantizeLinear ->
  // DequantizeLinear (zero point 0, per channel on w.axis). QuantizeLinear gives back exactly
  // w.weights: q * s / s is within an ulp of q, far from a rounding tie.
  absl::StatusOr<Value*> QuantizedFloatConstant(const std::string& base, const QuantizedWeights& w) {
    const ir::Tensor& q = w.weights;
    const int64_t channels = w.weight_scales.num_elements();
    Tensor dequantized(DataType::kFloat32, q.dims());
    const auto& dims = q.dims();
    int64_t inner = 1;
    for (size_t d = w.axis + 1; d < dims.size(); ++d) inner *= dims[d];
    const int8_t* qd = q.data<int8_t>();
    const float* scales = w.weight_scales.data<float>();
    float* out = dequantized.data<float>();
    for (int64_t i = 0; i < q.num_elements(); ++i) {
      const int64_t c = channels == 1 ? 0 : (i / inner) % channels;
      out[i] = static_cast<float>(qd[i]) * scales[c];
    }
    const bool per_axis = channels > 1;
    Tensor scale_tensor = w.weight_scales;
    Tensor zero_points(DataType::kInt8, {channels});
    if (!per_axis) {
      QFUSE_RETURN_IF_ERROR(zero_points.SetDims({}));
      QFUSE_RETURN_IF_ERROR(scale_tensor.SetDims({}));
    }
    QFUSE_ASSIGN_OR_RETURN(Value * f, graph_.AddConstant(graph_.UniqueValueName(base + "_int8_values"),
                                                         std::move(dequantized)));
    QFUSE_ASSIGN_OR_RETURN(Value * s, graph_.AddConstant(graph_.UniqueValueName(base + "_scale"), scale_tensor));
    QFUSE_ASSIGN_OR_RETURN(Value * z, graph_.AddConstant(graph_.UniqueValueName(base + "_zero_point"),
                                                         std::move(zero_points)));
    ir::AttributeMap attrs;
    if (per_axis) attrs.Set("axis", w.axis);
    QFUSE_ASSIGN_OR_RETURN(Node * qn, graph_.AddNode("QuantizeLinear", base + "_QuantizeLinear", {f, s, z},
                                                     {graph_.UniqueValueName(base + "_quantized")}, attrs));
    qn->output(0)->mutable_type() = ir::TensorType{DataType::kInt8, ir::Shape::FromDims(dims), {}};
    QFUSE_ASSIGN_OR_RETURN(Node * dq, graph_.AddNode("DequantizeLinear", base + "_DequantizeLinear",
                                                     {qn->output(0), s, z},
                                                     {graph_.UniqueValueName(base + "_dequantized")}, attrs));
    dq->output(0)->mutable_type() = ir::TensorType{DataType::kFloat32, ir::Shape::FromDims(dims), {}};
    return dq->output(0);
  }

  bool tensorrt() const { return options_.target == DeployTarget::kTensorRt; }

  // int8/int32 constant `data` -> DequantizeLinear(scale, zero point, axis).
  absl::StatusOr<Value*> DequantizedConstant(const std::string& base, Tensor data, const Tensor& scales,
                                             Tensor zero_points, int64_t axis) {
    const bool per_axis = scales.num_elements() > 1;
    Tensor scale_tensor = scales;
    if (!per_axis) {
      QFUSE_RETURN_IF_ERROR(zero_points.SetDims({}));
      QFUSE_RETURN_IF_ERROR(scale_tensor.SetDims({}));
    }
    const std::vector<int64_t> dims = data.dims();
    QFUSE_ASSIGN_OR_RETURN(Value * q, graph_.AddConstant(graph_.UniqueValueName(base + "_quantized"), std::move(data)));
    QFUSE_ASSIGN_OR_RETURN(Value * s, graph_.AddConstant(graph_.UniqueValueName(base + "_scale"), scale_tensor));
    QFUSE_ASSIGN_OR_RETURN(Value * z,
                           graph_.AddConstant(graph_.UniqueValueName(base + "_zero_point"), std::move(zero_points)));
    ir::AttributeMap attrs;
    if (per_axis) attrs.Set("axis", axis);
    QFUSE_ASSIGN_OR_RETURN(Node * dq, graph_.AddNode("DequantizeLinear", base + "_DequantizeLinear", {q, s, z},
                                                     {graph_.UniqueValueName(base + "_dequantized")}, attrs));
    dq->output(0)->mutable_type() = ir::TensorType{DataType::kFloat32, ir::Shape::FromDims(dims), {}};
    return dq->output(0);
  }

  ir::Graph& graph_;
  const calib::CalibrationTable& table_;
  const ConvertOptions& options_;
  ConversionStats stats_;
  absl::flat_hash_map<const Value*, QuantParams> params_;
  absl::flat_hash_map<const Value*, Value*> dequantized_;
  SharedRanges shared_range_;  // value -> the value whose range it takes (shared_ranges.h)
  absl::flat_hash_set<const Value*> shape_derived_;  // computed from shapes and constants only
  absl::flat_hash_set<const Node*> float_nodes_;  // kept float because their bias could not fit
  absl::flat_hash_set<const Node*> float_pass_throughs_;  // see MarkFloatPassThroughs
  absl::flat_hash_set<const Node*> absorbed_clamps_;      // see MarkAbsorbedClamps
  ir::ValueLowerBounds lower_bounds_;  // values on a uint8 grid of [max(L, -T), T] (unsigned_non_negative)
};

}  // namespace

ConvertOptions WithTargetDefaults(ConvertOptions options, const UserChoices& chosen) {
  const bool onnxruntime = options.target == DeployTarget::kOnnxRuntime;
  if (!chosen.activation_type) options.activation_type = onnxruntime ? ActivationType::kUint8 : ActivationType::kInt8;
  if (!chosen.reduce_range) options.reduce_range = onnxruntime;
  if (!chosen.int8_as_uint8) options.int8_as_uint8 = options.target == DeployTarget::kQfuse;
  // TensorRT reads INT8 with zero point 0 only; uint8 activations have their own zero points.
  if (options.activation_type != ActivationType::kInt8 || options.target == DeployTarget::kTensorRt) {
    options.int8_as_uint8 = false;
  }
  if (!chosen.unsigned_non_negative) options.unsigned_non_negative = options.int8_as_uint8;
  if (!options.int8_as_uint8) options.unsigned_non_negative = false;
  if (!chosen.bounded_below) options.bounded_below = options.unsigned_non_negative;
  if (!options.unsigned_non_negative) options.bounded_below = false;
  // The integer-head form is target qfuse's (onnxruntime's and TensorRT's placements are their own).
  if (!chosen.integer_heads) options.integer_heads = true;
  if (options.target != DeployTarget::kQfuse) options.integer_heads = false;
  return options;
}

calib::UnsignedGrid UnsignedGridOf(const ConvertOptions& options) {
  if (options.activation_type == ActivationType::kUint8) return calib::UnsignedGrid::kObservedNonNegative;
  if (options.int8_as_uint8 && options.unsigned_non_negative) {
    return options.bounded_below ? calib::UnsignedGrid::kBoundedBelowByConstruction
                                 : calib::UnsignedGrid::kNonNegativeByConstruction;
  }
  return calib::UnsignedGrid::kNone;
}

absl::StatusOr<ConversionStats> ConvertToQdq(ir::Model* model, const calib::CalibrationTable& table,
                                             const ConvertOptions& options) {
  if (options.target == DeployTarget::kTensorRt && options.activation_type != ActivationType::kInt8) {
    return absl::InvalidArgumentError("target tensorrt takes int8 activations (symmetric, zero point 0), not uint8");
  }
  if (options.target == DeployTarget::kTensorRt && options.int8_as_uint8) {
    return absl::InvalidArgumentError("target tensorrt takes INT8 activations with zero point 0, not --int8_as_uint8");
  }
  for (const std::string& name : options.keep_float) {
    bool found = false;
    for (const Node* n : model->graph->nodes()) found |= n->name() == name;
    if (!found) return absl::InvalidArgumentError(absl::StrCat("--keep_float names no node '", name, "'"));
  }
  Converter converter(model, table, options);
  QFUSE_ASSIGN_OR_RETURN(ConversionStats stats, converter.Run());
  if (options.integer_heads) {
    if (options.target != DeployTarget::kQfuse) {
      return absl::InvalidArgumentError("integer heads are a form of target qfuse only");
    }
    QFUSE_ASSIGN_OR_RETURN(stats.integer_heads, WriteIntegerHeads(model->graph.get()));
  }
  model->graph->RemoveUnusedConstants();
  // Per-axis DequantizeLinear and the canonical operator forms need opset 13.
  model->opset = std::max<int64_t>(model->opset, ir::kPerChannelQdqOpset);
  QFUSE_RETURN_IF_ERROR(model->graph->Verify());
  if (options.target == DeployTarget::kTensorRt) {  // the rules, on the ops as exported
    std::unique_ptr<ir::Graph> exported = model->graph->Clone();
    QFUSE_RETURN_IF_ERROR(ir::ExpandUnits(exported.get()));
    QFUSE_RETURN_IF_ERROR(CheckTensorRtPlacement(*exported));
  }
  return stats;
}

}  // namespace qfuse::quant
