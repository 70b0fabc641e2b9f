// Every kernel of the reference runtime, registered by explicit calls in one place.
#include "absl/strings/str_cat.h"
#include "runtime/kernel_registry.h"
#include "ir/fused_unit.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/fused/quant_unit.h"
#include "runtime/kernels/linalg/linalg.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/quant/quant_ops.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/onednn/blocked_kernels.h"
#include "runtime/onednn/conv_kernel.h"
#include "runtime/onednn/pool_kernel.h"
#include "runtime/onednn/qlinear_conv_kernel.h"

namespace qfuse::runtime {
namespace {

KernelRegistry* BuildRegistry() {
  using namespace kernels;  // NOLINT: factories only
  auto* r = new KernelRegistry();
  // Elementwise.
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Exp", "Sqrt",
                         "Clip", "Identity", "Dropout"}) {
    r->Register(op, CreateUnaryKernel);
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "PRelu"}) r->Register(op, CreateBinaryKernel);
  for (const char* op : {"Sum", "Max", "Min"}) r->Register(op, CreateVariadicKernel);
  r->Register("Cast", CreateCastKernel);
  for (const char* op : {"Equal", "Less", "Greater"}) r->Register(op, CreateCompareKernel);
  r->Register("Not", CreateNotKernel);
  r->Register("Where", CreateWhereKernel);
  // Linear algebra.
  r->Register("Conv", onednn::CreateFloatConvKernel);  // oneDNN when it fits, else CreateConvKernel
  r->Register("ConvTranspose", CreateConvTransposeKernel);
  r->Register("Gemm", CreateGemmKernel);
  r->Register("MatMul", CreateMatMulKernel);
  r->Register("Einsum", CreateEinsumKernel);
  // Neural-network layers, normalisation and reductions.
  r->Register("MaxPool", onednn::CreateOneDnnPoolKernel);  // oneDNN when it fits, else CreatePoolKernel
  r->Register("AveragePool", onednn::CreateOneDnnPoolKernel);
  r->Register("GlobalAveragePool", onednn::CreateOneDnnGlobalPoolKernel);
  r->Register("GlobalMaxPool", onednn::CreateOneDnnGlobalPoolKernel);
  r->Register("BatchNormalization", CreateBatchNormKernel);
  r->Register("InstanceNormalization", CreateInstanceNormKernel);
  r->Register("LayerNormalization", CreateLayerNormKernel);
  r->Register("LRN", CreateLrnKernel);
  r->Register("Softmax", CreateSoftmaxKernel);
  r->Register("LogSoftmax", CreateSoftmaxKernel);
  r->Register("ReduceSum", CreateReduceKernel);
  r->Register("ReduceMean", CreateReduceKernel);
  r->Register("ReduceMax", CreateReduceKernel);
  r->Register("ArgMax", CreateArgMaxKernel);
  // Data movement.
  r->Register("Flatten", CreateFlattenKernel);
  r->Register("Reshape", CreateReshapeKernel);
  r->Register("Transpose", CreateTransposeKernel);
  r->Register("Concat", onednn::CreateConcatKernel);  // blocked inputs stay blocked, else CreateConcatKernel
  r->Register("Split", CreateSplitKernel);
  r->Register("Slice", CreateSliceKernel);
  r->Register("Squeeze", CreateSqueezeKernel);
  r->Register("Unsqueeze", CreateUnsqueezeKernel);
  r->Register("Gather", CreateGatherKernel);
  r->Register("Shape", CreateShapeKernel);
  r->Register("Pad", CreatePadKernel);
  r->Register("Resize", CreateResizeKernel);
  r->Register("ConstantOfShape", CreateConstantOfShapeKernel);
  r->Register("Expand", CreateExpandKernel);
  r->Register("Range", CreateRangeKernel);
  r->Register("ScatterND", CreateScatterNdKernel);
  // Standard quantized operators.
  r->Register("QuantizeLinear", CreateQuantizeLinearKernel);
  r->Register("DequantizeLinear", CreateDequantizeLinearKernel);
  r->Register("QLinearConv", CreateQLinearConvKernel);
  r->Register("ConvInteger", CreateConvIntegerKernel);
  r->Register("QLinearMatMul", CreateQLinearMatMulKernel);
  r->Register("MatMulInteger", CreateMatMulIntegerKernel);
  // qfuse's own ops.
  r->Register(std::string(ir::kQfuseDomain) + "." + ir::kUnitOpType, onednn::CreateFloatUnitKernel);
  // qfuse's integer ops (made from QDQ groups by runtime/int8/qdq_lowering.h).
  const std::string q = std::string(ir::kQfuseDomain) + ".";
  r->Register(q + int8::kQLinearUnitOp, onednn::CreateIntegerUnitKernel);  // else int8::CreateQLinearUnitKernel
  r->Register(q + int8::kQLinearAddOp, int8::CreateQLinearAddKernel);
  r->Register(q + int8::kQLinearMulOp, int8::CreateQLinearMulKernel);
  r->Register(q + int8::kQLinearClampOp, int8::CreateQLinearClampKernel);
  r->Register(q + int8::kQLinearChannelMapOp, int8::CreateQLinearChannelMapKernel);
  r->Register(q + int8::kQLinearActivationOp, int8::CreateQLinearActivationKernel);
  r->Register(q + int8::kQLinearLookupOp, int8::CreateQLinearClampKernel);  // the same byte-table kernel
  r->Register(q + int8::kQLinearAveragePoolOp, int8::CreateQLinearAveragePoolKernel);
  r->Register(q + int8::kQLinearGlobalAveragePoolOp, int8::CreateQLinearAveragePoolKernel);
  r->Register(q + int8::kQLinearConcatOp, int8::CreateQLinearConcatKernel);
  r->Register(q + int8::kQLinearSoftmaxOp, int8::CreateQLinearSoftmaxKernel);
  r->Register(q + int8::kGeluOp, CreateUnaryKernel);  // a float op the lowering makes
  r->Register(q + int8::kSimplifiedLayerNormOp, CreateSimplifiedLayerNormKernel);  // layer_norm_fusion.h makes it
  r->Register(q + int8::kChannelAffineOp, onednn::CreateChannelAffineKernel);  // float_chain_fusion.h makes it
  return r;
}

}  // namespace

const KernelRegistry& DefaultKernelRegistry() {
  static const KernelRegistry* registry = BuildRegistry();
  return *registry;
}

}  // namespace qfuse::runtime
