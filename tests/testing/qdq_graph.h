// Hand-built QDQ graphs for integer-runtime tests: INT8 graph inputs read through
// DequantizeLinear, int8 weights / int32 bias behind DequantizeLinear, float ops, and a
// QuantizeLinear (or float) graph output.
#ifndef QFUSE_TESTS_TESTING_QDQ_GRAPH_H_
#define QFUSE_TESTS_TESTING_QDQ_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace qfuse::testing {

inline ir::TensorType Type(ir::DataType t, const std::vector<int64_t>& dims) {
  return ir::TensorType{t, ir::Shape::FromDims(dims), {}};
}

// Builds DQ -> op -> Q graphs with INT8 graph inputs and INT8 (or float) outputs.
class QdqGraph {
 public:
  // An INT8 graph input and its DequantizeLinear output.
  ir::Value* Input(const std::string& name, const std::vector<int64_t>& dims, float scale, int8_t zp) {
    ir::Value* q = *g_.AddInput(name, Type(ir::DataType::kInt8, dims));
    return Dq(q, Scalar(name + "_s", scale), Int8Scalar(name + "_zp", zp), dims);
  }
  // int8 weights behind a per-axis (scales.size() > 1) or per-tensor DequantizeLinear.
  // A graph input of `type` (INT8 or UINT8) and its DequantizeLinear output.
  ir::Value* Input(const std::string& name, const std::vector<int64_t>& dims, ir::DataType type, float scale, int zp) {
    ir::Value* q = *g_.AddInput(name, Type(type, dims));
    return Dq(q, Scalar(name + "_s", scale), ZeroPoint(name + "_zp", type, zp), dims);
  }
  ir::Value* Weights(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int8_t>& w,
                     const std::vector<float>& scales, int64_t axis) {
    ir::Value* data = *g_.AddConstant(name, ir::Tensor::FromVector<int8_t>(dims, w));
    return DqConstant(data, scales, std::vector<int8_t>(scales.size(), 0), axis, dims);
  }
  ir::Value* Bias(const std::string& name, const std::vector<int32_t>& b, const std::vector<float>& scales) {
    ir::Value* data = *g_.AddConstant(name, ir::Tensor::FromVector<int32_t>({static_cast<int64_t>(b.size())}, b));
    return DqConstant(data, scales, std::vector<int32_t>(scales.size(), 0), 0, {static_cast<int64_t>(b.size())});
  }
  ir::Value* Op(const std::string& op, const std::vector<ir::Value*>& inputs, const std::vector<int64_t>& dims,
                ir::AttributeMap attrs = {}) {
    ir::Node* n = *g_.AddNode(op, op + std::to_string(++count_), inputs, {op + "_out" + std::to_string(count_)}, attrs);
    n->output(0)->mutable_type() = Type(ir::DataType::kFloat32, dims);
    return n->output(0);
  }
  ir::Value* FloatConst(const std::string& name, float v) { return Scalar(name, v); }
  // QuantizeLinear of `y` as the INT8 graph output "y".
  void Output(ir::Value* y, float scale, int8_t zp) {
    ir::Node* q = *g_.AddNode("QuantizeLinear", "q_out", {y, Scalar("y_s", scale), Int8Scalar("y_zp", zp)}, {"y"});
    q->output(0)->mutable_type() = Type(ir::DataType::kInt8, {});
    q->output(0)->mutable_type().shape = y->type().shape;
    (void)g_.MarkOutput(q->output(0));
  }
  // QuantizeLinear of `y` as the graph output "y" of `type` (INT8 or UINT8).
  void Output(ir::Value* y, ir::DataType type, float scale, int zp) {
    ir::Node* q = *g_.AddNode("QuantizeLinear", "q_out", {y, Scalar("y_s", scale), ZeroPoint("y_zp", type, zp)}, {"y"});
    q->output(0)->mutable_type() = Type(type, {});
    q->output(0)->mutable_type().shape = y->type().shape;
    (void)g_.MarkOutput(q->output(0));
  }
  // QuantizeLinear of `v` to `type` (INT8 or UINT8) and its DequantizeLinear: a requantized
  // intermediate, as between two separately quantized ops.
  ir::Value* QuantizeDequantize(ir::Value* v, ir::DataType type, float scale, int zp) {
    const std::string name = "q" + std::to_string(++count_);
    ir::Value* s = Scalar(name + "_s", scale);
    ir::Value* z = ZeroPoint(name + "_zp", type, zp);
    ir::Node* q = *g_.AddNode("QuantizeLinear", name, {v, s, z}, {name + "_out"});
    q->output(0)->mutable_type() = Type(type, {});
    q->output(0)->mutable_type().shape = v->type().shape;
    ir::Node* dq = *g_.AddNode("DequantizeLinear", name + "_dq", {q->output(0), s, z}, {name + "_dequantized"});
    dq->output(0)->mutable_type() = v->type();
    return dq->output(0);
  }
  void FloatOutput(ir::Value* y) { (void)g_.MarkOutput(y); }
  ir::Graph& graph() { return g_; }

 private:
  ir::Value* Scalar(const std::string& name, float v) { return *g_.AddConstant(name, ir::Tensor::Scalar<float>(v)); }
  ir::Value* Int8Scalar(const std::string& name, int8_t v) {
    return *g_.AddConstant(name, ir::Tensor::Scalar<int8_t>(v));
  }
  ir::Value* ZeroPoint(const std::string& name, ir::DataType type, int zp) {
    return type == ir::DataType::kUint8 ? *g_.AddConstant(name, ir::Tensor::Scalar<uint8_t>(static_cast<uint8_t>(zp)))
                                        : Int8Scalar(name, static_cast<int8_t>(zp));
  }
  ir::Value* Dq(ir::Value* q, ir::Value* s, ir::Value* zp, const std::vector<int64_t>& dims,
                ir::AttributeMap attrs = {}) {
    ir::Node* n = *g_.AddNode("DequantizeLinear", q->name() + "_dq", {q, s, zp}, {q->name() + "_dequantized"}, attrs);
    n->output(0)->mutable_type() = Type(ir::DataType::kFloat32, dims);
    return n->output(0);
  }
  template <typename Z>
  ir::Value* DqConstant(ir::Value* data, const std::vector<float>& scales, const std::vector<Z>& zps, int64_t axis,
                        const std::vector<int64_t>& dims) {
    const bool per_axis = scales.size() > 1;
    const std::vector<int64_t> pdims = per_axis ? std::vector<int64_t>{static_cast<int64_t>(scales.size())}
                                                : std::vector<int64_t>{};
    ir::Value* s = *g_.AddConstant(data->name() + "_s", ir::Tensor::FromVector<float>(pdims, scales));
    ir::Value* z = *g_.AddConstant(data->name() + "_zp", ir::Tensor::FromVector<Z>(pdims, zps));
    ir::AttributeMap attrs;
    if (per_axis) attrs.Set("axis", axis);
    return Dq(data, s, z, dims, attrs);
  }

  ir::Graph g_;
  int count_ = 0;
};

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_QDQ_GRAPH_H_
