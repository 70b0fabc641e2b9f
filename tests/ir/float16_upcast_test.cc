// A float16 model (onnxconverter-common's keep_io_types form: FLOAT inputs and outputs, Casts
// to and from FLOAT16 around FLOAT16 weights, its input Cast appended last, out of order)
// imports as the float32 computation of the same weights; tensor data widened exactly from
// raw halves and from int32_data.
#include "ir/float16_upcast.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "runtime/executor.h"
#include "tests/testing/onnx_proto_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

using testing::AddNode;
using testing::SetFloatInfo;

void AddCast(onnx::GraphProto* g, const std::string& in, const std::string& out, int to) {
  onnx::AttributeProto* a = AddNode(g, "Cast", {in}, {out})->add_attribute();
  a->set_name("to");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(to);
}

// y = Cast(MatMul(Cast(x, FLOAT16), w) + b, FLOAT) with x [1, 2]; w [2, 2] in raw halves
// (1, 0.5, 0, 2^-24: 0x3c00, 0x3800, 0x0000, 0x0001), b [2] in int32_data (-2, 65504:
// 0xc000, 0x7bff); the input Cast last, as the converter appends it.
onnx::ModelProto Float16Model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(15);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("fp16");
  SetFloatInfo(g->add_input(), "x", {1, 2});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT16);
  w->add_dims(2);
  w->add_dims(2);
  const uint16_t halves[4] = {0x3c00, 0x3800, 0x0000, 0x0001};
  w->set_raw_data(std::string(reinterpret_cast<const char*>(halves), sizeof(halves)));
  onnx::TensorProto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT16);
  b->add_dims(2);
  b->add_int32_data(0xc000);
  b->add_int32_data(0x7bff);
  AddNode(g, "MatMul", {"x16", "w"}, {"p16"});
  AddNode(g, "Add", {"p16", "b"}, {"y16"});
  AddCast(g, "y16", "y", onnx::TensorProto::FLOAT);
  AddCast(g, "x", "x16", onnx::TensorProto::FLOAT16);
  SetFloatInfo(g->add_output(), "y", {1, 2});
  return m;
}

TEST(Float16UpcastTest, WidensDataCastsAndTypes) {
  onnx::ModelProto m = Float16Model();
  onnx::ValueInfoProto* info = m.mutable_graph()->add_value_info();
  SetFloatInfo(info, "p16", {1, 2});
  info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  Float16Upcast changes;
  QFUSE_ASSERT_OK(UpcastFloat16(m.mutable_graph(), &changes));
  EXPECT_EQ(changes.tensors, 2);
  EXPECT_EQ(changes.type_attrs, 1);  // the input Cast; the output one was to FLOAT already
  EXPECT_EQ(changes.values, 1);
  const onnx::TensorProto& w = m.graph().initializer(0);
  ASSERT_EQ(w.data_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(w.raw_data().size(), 16u);
  float got[4];
  std::memcpy(got, w.raw_data().data(), sizeof(got));
  EXPECT_EQ(got[0], 1.f);
  EXPECT_EQ(got[1], 0.5f);
  EXPECT_EQ(got[2], 0.f);
  EXPECT_EQ(got[3], std::ldexp(1.f, -24));
  const onnx::TensorProto& b = m.graph().initializer(1);
  ASSERT_EQ(b.int32_data_size(), 0);
  std::memcpy(got, b.raw_data().data(), 8);
  EXPECT_EQ(got[0], -2.f);
  EXPECT_EQ(got[1], 65504.f);
  EXPECT_EQ(m.graph().node(3).attribute(0).i(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(m.graph().value_info(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);

  onnx::ModelProto short_data = Float16Model();
  short_data.mutable_graph()->mutable_initializer(1)->add_int32_data(0);
  Float16Upcast ignored;
  EXPECT_EQ(UpcastFloat16(short_data.mutable_graph(), &ignored).message(), "tensor 'b': has 3 values for shape [2]");
}

// Imported and run: the float32 result, which float16 cannot hold (x = 1/3 passes its Cast
// unrounded: 1/3 * 1 - 2 = -1.6666666 in float, -1.666 in float16), with a note saying so.
TEST(Float16UpcastTest, AFloat16ModelRunsInFloat32) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, ImportModel(Float16Model(), "", "fp16.onnx"));
  ASSERT_EQ(model.notes.size(), 1u);
  EXPECT_THAT(model.notes[0], ::testing::HasSubstr("FLOAT16 model imported as FLOAT"));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(*model.graph));
  const float third = 1.f / 3.f;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto outputs,
                             exec->Run({{"x", Tensor::FromVector<float>({1, 2}, std::vector<float>{third, 4.f})}}));
  ASSERT_EQ(outputs.size(), 1u);
  const auto y = outputs[0].tensor.values<float>();
  EXPECT_EQ(y[0], third * 1.f + 4.f * 0.f + -2.f);
  EXPECT_EQ(y[1], third * 0.5f + 4.f * std::ldexp(1.f, -24) + 65504.f);
  // Without the upcast the model imports in float16 form, which qfuse's kernels do not run.
  ImportOptions keep;
  keep.upcast_float16 = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(Model as_is, ImportModel(Float16Model(), "", "fp16.onnx", keep));
  EXPECT_TRUE(as_is.notes.empty());
}

// A model whose own inputs and outputs are FLOAT16 (x16 * w16 -> y16, and the weight w16 as a
// second output) keeps them: a Cast to FLOAT after the input, one to FLOAT16 before each
// output, the product rounded once, to
// nearest even (1/3 in float16 times 3 lies halfway between 0x3bff and 1.0; 1.0009766 * 3
// halfway between 0x4201 and 0x4202).
TEST(Float16UpcastTest, Float16InputsAndOutputsKeepTheirType) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(15);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("fp16io");
  SetFloatInfo(g->add_input(), "x", {2});
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT16);
  w->add_dims(1);
  w->add_int32_data(0x4200);  // 3
  AddNode(g, "Mul", {"x", "w"}, {"y"});
  SetFloatInfo(g->add_output(), "y", {2});
  SetFloatInfo(g->add_output(), "w", {1});  // a weight as an output: its bits come back
  for (onnx::ValueInfoProto& out : *g->mutable_output()) {
    out.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, ImportModel(m, "", "fp16io.onnx"));
  ASSERT_EQ(model.notes.size(), 1u);
  EXPECT_THAT(model.notes[0], ::testing::HasSubstr("3 FLOAT16 graph inputs/outputs kept through Casts"));
  EXPECT_EQ(model.graph->inputs()[0]->type().dtype, DataType::kFloat16);
  EXPECT_EQ(model.graph->outputs()[0]->type().dtype, DataType::kFloat16);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(*model.graph));
  Tensor x(DataType::kFloat16, {2});
  x.mutable_values<uint16_t>()[0] = 0x3555;  // 0.333251953125
  x.mutable_values<uint16_t>()[1] = 0x3c01;  // 1.0009765625
  QFUSE_ASSERT_OK_AND_ASSIGN(auto outputs, exec->Run({{"x", x}}));
  ASSERT_EQ(outputs[0].tensor.dtype(), DataType::kFloat16);
  EXPECT_EQ(outputs[0].tensor.values<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(outputs[0].tensor.values<uint16_t>()[1], 0x4202);
  ASSERT_EQ(outputs[1].tensor.dtype(), DataType::kFloat16);
  EXPECT_EQ(outputs[1].tensor.values<uint16_t>()[0], 0x4200);
}

}  // namespace
}  // namespace qfuse::ir
