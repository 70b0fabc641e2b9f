// QLinearAdd, QLinearMul, QLinearClamp, QLinearActivation and QLinearConcat
// (runtime/int8/int8_ops.h), elementwise over per-tensor int8/uint8 values.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/int8/byte_table.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/qlinear_add_row.h"
#include "runtime/int8/qlinear_kernel_util.h"
#include "runtime/int8/qlinear_mul_row.h"
#include "runtime/int8/unary_requantization.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernels/elementwise/broadcast.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;

// Elements per parallel chunk of the elementwise kernels.
constexpr int64_t kElementwiseChunk = 1 << 14;
// Broadcast runs at least this long with one operand fixed use a 256-entry byte table.
constexpr int64_t kByteTableRun = 64;

// QLinearAdd and QLinearMul: two int8/uint8 inputs, numpy broadcasting, one 64 KiB table of
// output bytes.
enum class BinaryOp { kAdd, kMul };

class QLinearBinaryKernel : public Kernel {
 public:
  explicit QLinearBinaryKernel(BinaryOp op) : op_(op) {}
  bool elementwise() const override { return true; }
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(mode_, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(a_, ReadActivationQuant(node.input(0), "A"));
    QFUSE_ASSIGN_OR_RETURN(b_, ReadActivationQuant(node.input(1), "B"));
    QFUSE_ASSIGN_OR_RETURN(y_, ReadActivationQuant(node.output(0), "C"));
    out_type_ = y_.type;
    // A folded clamp: the table computes the clamp's input (y_), then maps it to C's bytes.
    QFUSE_ASSIGN_OR_RETURN(const std::optional<FoldedClamp> folded, ReadFoldedClamp(node));
    std::optional<ByteTable> clamp;
    const ActivationQuant clamp_out = y_;
    if (folded.has_value()) {
      QFUSE_ASSIGN_OR_RETURN(clamp, ClampTable(mode_, folded->stage, y_, folded->min, folded->max));
      y_ = folded->stage;
    }
    OutputStageSpec spec;
    spec.mode = mode_;
    spec.output_type = y_.type;
    spec.output_scale = y_.scale;
    spec.output_zero_point = y_.zero_point;
    if (op_ == BinaryOp::kAdd) {
      spec.a.input_scale = a_.scale;
      spec.has_b = true;
      spec.b.input_scale = b_.scale;
    } else {  // one term: the product (a - zp_a)(b - zp_b) at scale s_a * s_b
      spec.a.input_scale = a_.scale;
      spec.a.weight_scales = {b_.scale};
    }
    QFUSE_ASSIGN_OR_RETURN(stage_, OutputStage::Create(spec));
    table_ = BuildTable(/*scalar_a=*/false);
    // Only onnxruntime's Add formula depends on the operand order.
    if (op_ == BinaryOp::kAdd && mode_ == numerics::RequantizeMode::kOnnx) {
      scalar_a_table_ = BuildTable(/*scalar_a=*/true);
    }
    if (clamp.has_value()) {
      for (uint8_t& v : table_) v = (*clamp)[v];
      for (uint8_t& v : scalar_a_table_) v = (*clamp)[v];
      clamp_ = *clamp;
    }
    if (op_ == BinaryOp::kAdd && mode_ == numerics::RequantizeMode::kOnnx) {
      std::optional<OnnxAddRow::Clamp> arithmetic_clamp;
      if (folded.has_value()) {
        OnnxAddRow::Clamp c;
        c.in_scale = y_.scale;
        c.in_zero_point = y_.zero_point;
        c.lo = folded->min;
        c.hi = folded->max;
        c.out_scale = clamp_out.scale;
        c.out_zero_point = clamp_out.zero_point;
        c.out_min = clamp_out.type == DataType::kInt8 ? -128 : 0;
        c.out_max = clamp_out.type == DataType::kInt8 ? 127 : 255;
        arithmetic_clamp = c;
      }
      UseAddRowIfItGivesTheTable(arithmetic_clamp);
    }
    if (op_ == BinaryOp::kMul && mode_ == numerics::RequantizeMode::kOnnx) UseMulRowIfItGivesTheTable();
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 2));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[0], a_, "A"));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[1], b_, "B"));
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    const uint8_t* ad = static_cast<const uint8_t*>(a.raw_data());
    const uint8_t* bd = static_cast<const uint8_t*>(b.raw_data());
    if (a.dims() == b.dims()) {
      QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type_, a.dims()));
      uint8_t* yd = static_cast<uint8_t*>(outputs[0].raw_data());
      const uint8_t* table = table_.data();
      ctx.pool->ParallelFor(a.num_elements(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
        RunRow(ad + begin, bd + begin, end - begin, table, yd + begin);
      });
      return absl::OkStatus();
    }
    // numpy broadcasting: along a run where a is one value and b varies, onnxruntime swaps the
    // operands (numerics/requantize.h), hence the second table.
    QFUSE_ASSIGN_OR_RETURN(const kernels::BroadcastPlan plan, kernels::MakeBroadcastPlan(a.dims(), b.dims()));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type_, plan.out_dims));
    uint8_t* yd = static_cast<uint8_t*>(outputs[0].raw_data());
    ctx.pool->ParallelFor(plan.num_elements, kElementwiseChunk, [&](int64_t begin, int64_t end) {
      kernels::ForEachRun(plan, begin, end, [&](int64_t o, int64_t ia, int64_t ib, int64_t n) {
        const bool swapped = plan.a_step == 0 && plan.b_step == 1 && !scalar_a_table_.empty();
        const uint8_t* table = swapped ? scalar_a_table_.data() : table_.data();
        if (n >= kByteTableRun && plan.a_step + plan.b_step == 1) {
          // One operand is one byte along the run (a squeeze-excitation scale over a plane):
          // the table's 256 entries for that byte, looked up 16 at a time (byte_table.h).
          ByteTable row;
          if (plan.b_step == 0) {
            for (int v = 0; v < 256; ++v) row[v] = table[(v << 8) | bd[ib]];
            LookupBytes(row, ad + ia, n, yd + o);
          } else {
            std::memcpy(row.data(), table + (ad[ia] << 8), row.size());
            LookupBytes(row, bd + ib, n, yd + o);
          }
          return;
        }
        if (plan.a_step == 1 && plan.b_step == 1 && !swapped) {  // both vary: a channels-last SE scale
          RunRow(ad + ia, bd + ib, n, table, yd + o);
          return;
        }
        for (int64_t i = 0; i < n; ++i) {
          yd[o + i] = table[(ad[ia + i * plan.a_step] << 8) | bd[ib + i * plan.b_step]];
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  // table[(raw byte of a) << 8 | raw byte of b] = the output byte. Both inputs are bytes, so a
  // 64 KiB table gives the same bytes as the arithmetic per element: kOnnx is onnxruntime's
  // QLinearAdd / QLinearMul (numerics::OnnxQLinearAdd / OnnxQLinearMul), kFixed the output stage
  // of the two terms (Add) or of the product (Mul).
  // Sets add_row_ when the AVX2 row gives table_'s byte for every one of the 65536 input
  // pairs: with a folded clamp, first with the clamp's arithmetic in the row, else with its
  // table after the row; otherwise the table runs alone.
  void UseAddRowIfItGivesTheTable(const std::optional<OnnxAddRow::Clamp>& arithmetic_clamp) {
    OnnxAddRow row;
    row.m =
        numerics::OnnxQLinearAddMultipliers(a_.scale, a_.zero_point, b_.scale, b_.zero_point, y_.scale, y_.zero_point);
    SetRowTypes(&row);
    auto add = [&](const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y) {
      return OnnxQLinearAddRowAvx2(row, a, b, n, y);
    };
    if (arithmetic_clamp.has_value()) {
      row.clamp = arithmetic_clamp;
      if (RowGivesTable(add, std::nullopt)) {
        add_row_ = row;
        return;
      }
      row.clamp.reset();
    }
    if (RowGivesTable(add, clamp_)) add_row_ = row;
  }

  // The same for the Mul row (qlinear_mul_row.h), with a folded clamp's table after it.
  void UseMulRowIfItGivesTheTable() {
    OnnxMulRow row;
    row.a_zero_point = a_.zero_point;
    row.b_zero_point = b_.zero_point;
    row.c_zero_point = y_.zero_point;
    row.ratio = numerics::OnnxQLinearMulRatio(a_.scale, b_.scale, y_.scale);
    SetRowTypes(&row);
    auto mul = [&](const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y) {
      return OnnxQLinearMulRowAvx2(row, a, b, n, y);
    };
    if (RowGivesTable(mul, clamp_)) mul_row_ = row;
  }

  // The input signs and output range of an Add or Mul row.
  template <typename Row>
  void SetRowTypes(Row* row) const {
    row->a_signed = a_.type == DataType::kInt8;
    row->b_signed = b_.type == DataType::kInt8;
    row->qmin = y_.type == DataType::kInt8 ? -128 : 0;
    row->qmax = y_.type == DataType::kInt8 ? 127 : 255;
  }

  // Whether `row` (then `after`'s map) gives table_'s byte for all 65536 input pairs.
  template <typename Row>
  bool RowGivesTable(Row row, const std::optional<ByteTable>& after) const {
    std::vector<uint8_t> a(1 << 16), b(1 << 16), y(1 << 16);
    for (int i = 0; i < (1 << 16); ++i) {
      a[i] = static_cast<uint8_t>(i >> 8);
      b[i] = static_cast<uint8_t>(i & 255);
    }
    if (row(a.data(), b.data(), 1 << 16, y.data()) != (1 << 16)) return false;
    if (after.has_value()) LookupBytes(*after, y.data(), 1 << 16, y.data());
    return y == table_;
  }

  // y[0, n) of a and b that both vary: the verified row where there is one, the table for the rest.
  void RunRow(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* table, uint8_t* y) const {
    int64_t done = 0;
    if (add_row_.has_value()) {  // the same bytes as the table (checked at Prepare)
      done = OnnxQLinearAddRowAvx2(*add_row_, a, b, n, y);
      if (clamp_.has_value() && !add_row_->clamp.has_value()) LookupBytes(*clamp_, y, done, y);
    } else if (mul_row_.has_value()) {
      done = OnnxQLinearMulRowAvx2(*mul_row_, a, b, n, y);
      if (clamp_.has_value()) LookupBytes(*clamp_, y, done, y);
    }
    // Local restrict pointers: through the captures, every byte stored would make the
    // compiler reload them.
    const uint8_t* __restrict x0 = a;
    const uint8_t* __restrict x1 = b;
    const uint8_t* __restrict t = table;
    uint8_t* __restrict out = y;
    for (int64_t i = done; i < n; ++i) out[i] = t[(x0[i] << 8) | x1[i]];
  }

  std::vector<uint8_t> BuildTable(bool scalar_a) const {
    std::vector<uint8_t> table(1 << 16);
    const numerics::OnnxAddMultipliers m =
        numerics::OnnxQLinearAddMultipliers(a_.scale, a_.zero_point, b_.scale, b_.zero_point, y_.scale, y_.zero_point);
    const float mul_ratio = numerics::OnnxQLinearMulRatio(a_.scale, b_.scale, y_.scale);
    const int32_t qmin = y_.type == DataType::kInt8 ? -128 : 0, qmax = y_.type == DataType::kInt8 ? 127 : 255;
    for (int ra = 0; ra < 256; ++ra) {
      for (int rb = 0; rb < 256; ++rb) {
        const int32_t av = a_.type == DataType::kInt8 ? static_cast<int8_t>(ra) : ra;
        const int32_t bv = b_.type == DataType::kInt8 ? static_cast<int8_t>(rb) : rb;
        int32_t q;
        if (op_ == BinaryOp::kMul) {
          q = mode_ == numerics::RequantizeMode::kOnnx
                  ? numerics::OnnxQLinearMul(av, a_.zero_point, bv, b_.zero_point, mul_ratio, y_.zero_point, qmin, qmax)
                  : stage_.Quantize((av - a_.zero_point) * (bv - b_.zero_point), 0);
        } else {
          q = mode_ == numerics::RequantizeMode::kOnnx ? numerics::OnnxQLinearAdd(av, bv, m, scalar_a, qmin, qmax)
                                                       : stage_.Quantize(av - a_.zero_point, bv - b_.zero_point, 0);
        }
        table[(ra << 8) | rb] = static_cast<uint8_t>(q);
      }
    }
    return table;
  }

  BinaryOp op_;
  numerics::RequantizeMode mode_ = numerics::RequantizeMode::kOnnx;
  ActivationQuant a_, b_, y_;  // y_: the arithmetic's output (a folded clamp's input)
  ir::DataType out_type_ = DataType::kInt8;
  OutputStage stage_;
  std::vector<uint8_t> table_;
  std::vector<uint8_t> scalar_a_table_;  // mode kOnnx only: A broadcast along a run of B
  std::optional<ByteTable> clamp_;       // a folded clamp's map, also in table_
  // Add in mode kOnnx where it gives table_ (AVX2); with `clamp` set it computes the folded
  // clamp too, else clamp_'s map runs after it.
  std::optional<OnnxAddRow> add_row_;
  std::optional<OnnxMulRow> mul_row_;  // Mul in mode kOnnx where it gives table_ (AVX2), clamp_ after it
};

// QLinearClamp and QLinearActivation: one byte table per node.
class QLinearClampKernel : public Kernel {
 public:
  bool elementwise() const override { return true; }
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(const numerics::RequantizeMode mode, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(x_, ReadActivationQuant(node.input(0), "X"));
    QFUSE_ASSIGN_OR_RETURN(const ActivationQuant y, ReadActivationQuant(node.output(0), "Y"));
    out_type_ = y.type;
    if (node.op_type() == kQLinearActivationOp) {
      QFUSE_ASSIGN_OR_RETURN(const ir::UnitSpec activation, ir::ReadUnitActivation(node));
      table_ = ActivationTable(x_, y, activation);
      return absl::OkStatus();
    }
    if (node.op_type() == kQLinearLookupOp) {
      QFUSE_ASSIGN_OR_RETURN(const std::vector<int64_t> table, node.attrs().GetInts(kLookupTableAttr, {}));
      if (table.size() != table_.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": 'table' has ", table.size(), " entries, not 256"));
      }
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i] < 0 || table[i] > 255) {
          return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": 'table' entry ", i, " is ", table[i]));
        }
        table_[i] = static_cast<uint8_t>(table[i]);
      }
      return absl::OkStatus();
    }
    QFUSE_ASSIGN_OR_RETURN(const float lo, node.attrs().GetFloat("min", std::numeric_limits<float>::lowest()));
    QFUSE_ASSIGN_OR_RETURN(const float hi, node.attrs().GetFloat("max", std::numeric_limits<float>::max()));
    QFUSE_ASSIGN_OR_RETURN(table_, ClampTable(mode, x_, y, lo, hi));
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[0], x_, "X"));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type_, x.dims()));
    const uint8_t* xd = static_cast<const uint8_t*>(x.raw_data());
    uint8_t* yd = static_cast<uint8_t*>(outputs[0].raw_data());
    ctx.pool->ParallelFor(x.num_elements(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
      LookupBytes(table_, xd + begin, end - begin, yd + begin);
    });
    return absl::OkStatus();
  }

 private:
  ActivationQuant x_;
  ir::DataType out_type_ = DataType::kInt8;
  ByteTable table_{};  // raw input byte -> output byte (ClampTable, or ActivationTable)
};

class QLinearConcatKernel : public Kernel {
 public:
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(const numerics::RequantizeMode mode, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(axis_, node.attrs().GetInt("axis", 0));
    QFUSE_ASSIGN_OR_RETURN(y_, ReadActivationQuant(node.output(0), "output"));
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      QFUSE_ASSIGN_OR_RETURN(ActivationQuant in, ReadActivationQuant(node.input(i), absl::StrCat("input ", i)));
      copy_.push_back(in.type == y_.type && in.scale == y_.scale && in.zero_point == y_.zero_point);
      in_.push_back(in);
      QFUSE_ASSIGN_OR_RETURN(ByteTable table, ClampTable(mode, in, y_, std::numeric_limits<float>::lowest(),
                                                         std::numeric_limits<float>::max()));
      tables_.push_back(table);
    }
    return absl::OkStatus();
  }

  // Channels-last when every input is (the integer units' layout), on the channel axis of a
  // 4-D tensor: each pixel's output channels are the inputs' channels one after another, so
  // the units and pools after it read it without a reorder.
  std::optional<TensorLayout> layout_for_inputs(absl::Span<const TensorLayout> inputs) const override {
    if ((axis_ != 1 && axis_ != -3) || in_.empty() || inputs.size() != in_.size()) return std::nullopt;
    int64_t channels = 0;
    for (const TensorLayout& l : inputs) {
      if (l.kind != LayoutKind::kChannelsLast) return std::nullopt;
      channels += l.channels;
    }
    return TensorLayout{LayoutKind::kChannelsLast, channels};
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, in_.size()));
    if (ctx.input_layouts != nullptr && ctx.input_layouts[0].kind == LayoutKind::kChannelsLast) {
      return RunChannelsLast(ctx, inputs, outputs);
    }
    const Tensor& first = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, kernels::NormalizeAxis(axis_, first.rank()));
    std::vector<int64_t> out_dims = first.dims();
    out_dims[axis] = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      QFUSE_RETURN_IF_ERROR(CheckType(inputs[i], in_[i], "input"));
      const Tensor& t = *inputs[i];
      bool ok = t.rank() == first.rank();
      for (int64_t d = 0; ok && d < t.rank(); ++d) ok = d == axis || t.dims()[d] == first.dims()[d];
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", ir::DimsToString(t.dims()), " does not match ",
                                                       ir::DimsToString(first.dims()), " outside axis ", axis));
      }
      out_dims[axis] += t.dims()[axis];
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(y_.type, out_dims));  // every byte written
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_dims[d];
    const int64_t out_block = outer > 0 ? outputs[0].num_elements() / outer : 0;
    int64_t offset = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      const Tensor& t = *inputs[i];
      const int64_t block = outer > 0 ? t.num_elements() / outer : 0;
      WithBytes(t, [&](const auto* xd) {
        WithMutableBytes(&outputs[0], [&](auto* yd) {
          using T = std::remove_pointer_t<decltype(yd)>;
          ctx.pool->ParallelFor(outer, std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(block, 1)),
                                [&](int64_t begin, int64_t end) {
                                  for (int64_t o = begin; o < end; ++o) {
                                    const auto* src = xd + o * block;
                                    T* dst = yd + o * out_block + offset;
                                    if (copy_[i]) {
                                      std::memcpy(dst, src, block);
                                    } else {
                                      LookupBytes(tables_[i], reinterpret_cast<const uint8_t*>(src), block,
                                                  reinterpret_cast<uint8_t*>(dst));
                                    }
                                  }
                                });
        });
      });
      offset += block;
    }
    return absl::OkStatus();
  }

 private:
  // Inputs [N, H, W, C_i] (as layout_for_inputs planned) into [N, H, W, sum C_i].
  absl::Status RunChannelsLast(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                               absl::Span<Tensor> outputs) const {
    const Tensor& first = *inputs[0];
    int64_t channels = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      QFUSE_RETURN_IF_ERROR(CheckType(inputs[i], in_[i], "input"));
      const Tensor& t = *inputs[i];
      if (ctx.input_layouts[i].kind != LayoutKind::kChannelsLast || t.rank() != 4 || first.rank() != 4 ||
          t.dims()[3] != ctx.input_layouts[i].channels || t.dims()[0] != first.dims()[0] ||
          t.dims()[1] != first.dims()[1] || t.dims()[2] != first.dims()[2]) {
        return absl::InvalidArgumentError(absl::StrCat("channels-last input ", i, " ", ir::DimsToString(t.dims()),
                                                       " does not match ", ir::DimsToString(first.dims())));
      }
      channels += t.dims()[3];
    }
    const std::vector<int64_t>& d = first.dims();
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(y_.type, {d[0], d[1], d[2], channels}));
    auto* y = static_cast<uint8_t*>(outputs[0].raw_data());
    const int64_t pixels = d[0] * d[1] * d[2];
    ctx.pool->ParallelFor(pixels, std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(channels, 1)),
                          [&](int64_t begin, int64_t end) {
                            int64_t offset = 0;
                            for (size_t i = 0; i < in_.size(); ++i) {
                              const int64_t c = inputs[i]->dims()[3];
                              const auto* x = static_cast<const uint8_t*>(inputs[i]->raw_data());
                              for (int64_t p = begin; p < end; ++p) {
                                if (copy_[i]) {
                                  std::memcpy(y + p * channels + offset, x + p * c, c);
                                } else {
                                  LookupBytes(tables_[i], x + p * c, c, y + p * channels + offset);
                                }
                              }
                              offset += c;
                            }
                          });
    return absl::OkStatus();
  }

  int64_t axis_ = 0;
  ActivationQuant y_;
  std::vector<ActivationQuant> in_;
  std::vector<ByteTable> tables_;  // per input: raw byte -> output byte (ClampTable)
  std::vector<bool> copy_;
};

}  // namespace

const char* RequantizeModeName(numerics::RequantizeMode mode) {
  return mode == numerics::RequantizeMode::kFixed ? "fixed" : "onnx";
}

absl::StatusOr<numerics::RequantizeMode> ReadRequantizeMode(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(const std::string mode, node.attrs().GetString(kRequantizeModeAttr, "onnx"));
  if (mode == "onnx") return numerics::RequantizeMode::kOnnx;
  if (mode == "fixed") return numerics::RequantizeMode::kFixed;
  return absl::InvalidArgumentError(absl::StrCat(kRequantizeModeAttr, " is '", mode, "'; expected onnx or fixed"));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearAddKernel(const ir::Node& node) {
  return MakePrepared<QLinearBinaryKernel>(node, BinaryOp::kAdd);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearMulKernel(const ir::Node& node) {
  return MakePrepared<QLinearBinaryKernel>(node, BinaryOp::kMul);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearClampKernel(const ir::Node& node) {
  return MakePrepared<QLinearClampKernel>(node);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearActivationKernel(const ir::Node& node) {
  return MakePrepared<QLinearClampKernel>(node);
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearConcatKernel(const ir::Node& node) {
  return MakePrepared<QLinearConcatKernel>(node);
}

}  // namespace qfuse::runtime::int8
