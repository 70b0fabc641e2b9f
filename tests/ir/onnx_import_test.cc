// Import details: opset forms normalised to canonical (opset 13) signatures and written
// back at the source opset or a raised one; Constant nodes; external data confinement;
// typed-field tensors; one-line errors that name the file.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "ir/graph_compare.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"
#include "tests/testing/onnx_proto_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

namespace fs = std::filesystem;

using testing::AddFloatAttr;
using testing::AddIntAttr;
using testing::AddIntsAttr;
using testing::AddNode;
using testing::SetFloatInfo;

// An opset-9 model in the style of old exporters: weights in Constant nodes, Clip
// bounds and Unsqueeze/Squeeze/ReduceSum axes as attributes, Upsample, 2-D Softmax.
onnx::ModelProto Opset9Model() {
  onnx::ModelProto m;
  m.set_ir_version(4);
  m.add_opset_import()->set_version(9);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("opset9");
  SetFloatInfo(g->add_input(), "x", {1, 2, 3});
  onnx::NodeProto* c = AddNode(g, "Constant", {}, {"w"});
  auto* attr = c->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  TensorToProto(Tensor::FromVector<float>({1, 2, 1}, std::vector<float>{0.5f, -2.f}), "w", attr->mutable_t());
  AddNode(g, "Mul", {"x", "w"}, {"m"});
  onnx::NodeProto* clip = AddNode(g, "Clip", {"m"}, {"c"});
  AddFloatAttr(clip, "min", 0.f);
  AddFloatAttr(clip, "max", 6.f);
  AddIntsAttr(AddNode(g, "Unsqueeze", {"c"}, {"u"}), "axes", {3});
  onnx::NodeProto* up = AddNode(g, "Upsample", {"u", "scales"}, {"up"});
  onnx::NodeProto* sc = AddNode(g, "Constant", {}, {"scales"});
  (void)up;
  auto* sattr = sc->add_attribute();
  sattr->set_name("value");
  sattr->set_type(onnx::AttributeProto::TENSOR);
  TensorToProto(Tensor::FromVector<float>({4}, std::vector<float>{1, 1, 2, 1}), "scales", sattr->mutable_t());
  // Constant must precede its consumer for the checker: move it before Upsample.
  g->mutable_node()->SwapElements(g->node_size() - 1, g->node_size() - 2);
  AddIntsAttr(AddNode(g, "Squeeze", {"up"}, {"s"}), "axes", {3});
  onnx::NodeProto* rs = AddNode(g, "ReduceSum", {"s"}, {"r"});
  AddIntsAttr(rs, "axes", {2});
  AddIntAttr(rs, "keepdims", 1);
  AddIntAttr(AddNode(g, "Softmax", {"r"}, {"y"}), "axis", 1);  // rank 3, axis 1: 2-D coercion
  SetFloatInfo(g->add_output(), "y", {1, 2, 1});
  return m;
}

TEST(OnnxImportTest, Opset9FormsAreNormalised) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, ImportModel(Opset9Model(), "", "opset9.onnx"));
  const Graph& g = *model.graph;
  EXPECT_EQ(model.opset, 9);
  // Constant nodes became constants.
  ASSERT_NE(g.FindValue("w"), nullptr);
  EXPECT_TRUE(g.FindValue("w")->is_constant());
  std::map<std::string, const Node*> by_op;
  for (const Node* n : g.nodes()) by_op[n->op_type()] = n;
  EXPECT_EQ(by_op.count("Constant"), 0u);
  EXPECT_EQ(by_op.count("Upsample"), 0u);
  // Clip bounds are inputs.
  const Node* clip = by_op.at("Clip");
  ASSERT_EQ(clip->inputs().size(), 3u);
  EXPECT_EQ(clip->input(2)->initializer()->data<float>()[0], 6.f);
  EXPECT_FALSE(clip->attrs().Has("min"));
  // Axes are int64 inputs.
  for (const char* op : {"Unsqueeze", "Squeeze", "ReduceSum"}) {
    const Node* n = by_op.at(op);
    ASSERT_EQ(n->inputs().size(), 2u) << op;
    EXPECT_EQ(n->input(1)->initializer()->dtype(), DataType::kInt64) << op;
    EXPECT_FALSE(n->attrs().Has("axes")) << op;
  }
  // Upsample is Resize-13 with asymmetric/floor and an omitted roi.
  const Node* resize = by_op.at("Resize");
  EXPECT_EQ(resize->input(1), nullptr);
  EXPECT_EQ(resize->input(2)->name(), "scales");
  EXPECT_EQ(*resize->attrs().GetString("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(*resize->attrs().GetString("nearest_mode", ""), "floor");
  // Softmax over axis 1 of a rank-3 tensor: Flatten -> Softmax(-1) -> Reshape, output name kept.
  EXPECT_EQ(by_op.count("Flatten"), 1u);
  EXPECT_EQ(by_op.count("Reshape"), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Reshape");
  QFUSE_EXPECT_OK(g.Verify());
}

TEST(OnnxImportTest, Opset9RoundTripsAtNineAndAtThirteen) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, ImportModel(Opset9Model(), "", "opset9.onnx"));
  for (int64_t opset : {9, 11, 13, 17}) {
    SCOPED_TRACE(opset);
    ExportOptions options;
    options.opset = opset;
    QFUSE_ASSERT_OK_AND_ASSIGN(onnx::ModelProto proto, ExportModel(model, options));
    EXPECT_EQ(proto.opset_import(0).version(), opset);
    // Written in the target opset's own forms.
    for (const auto& n : proto.graph().node()) {
      if (n.op_type() == "Clip") {
        EXPECT_EQ(n.input_size(), opset < 11 ? 1 : 3);
      }
      if (n.op_type() == "Unsqueeze") {
        EXPECT_EQ(n.input_size(), opset < 13 ? 1 : 2);
      }
      EXPECT_NE(n.op_type(), opset < 10 ? "Resize" : "Upsample");
    }
    QFUSE_ASSERT_OK_AND_ASSIGN(Model again, ImportModel(proto, "", "re-imported"));
    QFUSE_EXPECT_OK(CompareGraphs(*model.graph, *again.graph));
  }
}

TEST(OnnxImportTest, RefusesOpsetOutsideRangeWithClearMessage) {
  onnx::ModelProto m = Opset9Model();
  m.mutable_opset_import(0)->set_version(6);
  absl::StatusOr<Model> model = ImportModel(m, "", "old.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(model.status().message(),
            "old.onnx: default-domain opset 6 is unsupported (qfuse imports opsets 7 to 17; older models only when "
            "no operator changed since, but Mul did)");
}

TEST(OnnxImportTest, CheckerErrorsNameTheModel) {
  onnx::ModelProto m = Opset9Model();
  m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  absl::StatusOr<Model> model = ImportModel(m, "", "broken.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message().rfind("broken.onnx: ONNX checker:", 0), 0u) << model.status();
}

TEST(OnnxImportTest, NotAProtobufIsAnError) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/garbage.onnx";
  std::ofstream(path) << "this is not a model";
  absl::StatusOr<Model> model = LoadModel(path);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(path), std::string::npos);
  EXPECT_FALSE(LoadModel(path + ".missing").ok());
}

// Issue 13's smaller items: an empty file and a folder given as the model say so (they
// used to report "no default-domain opset_import"); a cycle is one line; a negative
// input dim and a graph without outputs are refused.
TEST(OnnxImportTest, EmptyFileFolderCycleNegativeDimAndNoOutputs) {
  const std::string dir = std::string(getenv("TEST_TMPDIR"));
  std::ofstream(dir + "/empty.onnx").close();
  EXPECT_EQ(LoadModel(dir + "/empty.onnx").status().message(), dir + "/empty.onnx: empty file, not an ONNX model");
  EXPECT_EQ(LoadModel(dir).status().message(), dir + ": is a directory, not an ONNX model file");

  onnx::ModelProto cycle = Opset9Model();
  cycle.mutable_graph()->mutable_node(1)->set_input(0, "c");  // Mul reads Clip's output
  absl::StatusOr<Model> cyclic = ImportModel(cycle, "", "cycle.onnx");
  ASSERT_FALSE(cyclic.ok());
  EXPECT_EQ(std::string(cyclic.status().message()).find('\n'), std::string::npos) << cyclic.status();
  EXPECT_NE(cyclic.status().message().find("topologically sorted"), std::string::npos) << cyclic.status();

  onnx::ModelProto negative = Opset9Model();
  negative.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_value(-3);
  EXPECT_EQ(ImportModel(negative, "", "neg.onnx").status().message(), "neg.onnx: input 'x' has negative dim -3");

  onnx::ModelProto no_outputs = Opset9Model();
  no_outputs.mutable_graph()->clear_output();
  EXPECT_EQ(ImportModel(no_outputs, "", "noout.onnx").status().message(), "noout.onnx: the graph has no outputs");
}

// A Gemm whose weight lives in an external file next to the model.
onnx::ModelProto ExternalDataModel(const std::string& location) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("ext");
  SetFloatInfo(g->add_input(), "x", {1, 2});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value(location);
  e = w->add_external_data();
  e->set_key("offset");
  e->set_value("4");
  AddNode(g, "MatMul", {"x", "w"}, {"y"});
  SetFloatInfo(g->add_output(), "y", {1, 2});
  return m;
}

TEST(OnnxImportTest, ExternalDataInsideModelFolderLoads) {
  const fs::path dir = fs::path(getenv("TEST_TMPDIR")) / "ext_model";
  fs::create_directories(dir);
  const float values[5] = {99.f, 1.f, 2.f, 3.f, 4.f};  // first float skipped by offset 4
  std::ofstream(dir / "weights.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof(values));
  std::ofstream(dir / "model.onnx", std::ios::binary) << ExternalDataModel("weights.bin").SerializeAsString();
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, LoadModel((dir / "model.onnx").string()));
  const Tensor* w = model.graph->FindValue("w")->initializer();
  ASSERT_EQ(w->num_elements(), 4);
  EXPECT_EQ(w->data<float>()[0], 1.f);
  EXPECT_EQ(w->data<float>()[3], 4.f);
}

TEST(OnnxImportTest, ExternalDataEscapingTheFolderIsRefused) {
  const fs::path dir = fs::path(getenv("TEST_TMPDIR")) / "escape_model";
  fs::create_directories(dir);
  std::ofstream(dir.parent_path() / "secret.bin") << "0123456789abcdef0123";
  for (const std::string& location : std::vector<std::string>{"../secret.bin", (dir.parent_path() / "secret.bin").string()}) {
    std::ofstream(dir / "model.onnx", std::ios::binary) << ExternalDataModel(location).SerializeAsString();
    absl::StatusOr<Model> model = LoadModel((dir / "model.onnx").string());
    ASSERT_FALSE(model.ok()) << location;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_NE(model.status().message().find("escapes the model's folder"), std::string::npos) << model.status();
  }
}

TEST(TensorProtoTest, TypedFieldsAndRawDataAgree) {
  onnx::TensorProto typed;
  typed.set_data_type(onnx::TensorProto::INT8);
  typed.add_dims(3);
  for (int v : {-128, 0, 127}) typed.add_int32_data(v);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor t, TensorFromProto(typed, "t"));
  EXPECT_EQ(t.dtype(), DataType::kInt8);
  EXPECT_EQ(t.data<int8_t>()[0], -128);
  EXPECT_EQ(t.data<int8_t>()[2], 127);
  onnx::TensorProto raw;
  TensorToProto(t, "t", &raw);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor back, TensorFromProto(raw, "t"));
  EXPECT_TRUE(back.BitwiseEqual(t));

  onnx::TensorProto i64;
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_dims(2);
  i64.add_int64_data(-5);
  i64.add_int64_data(int64_t{1} << 40);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor ti, TensorFromProto(i64, "i"));
  EXPECT_EQ(ti.data<int64_t>()[1], int64_t{1} << 40);

  onnx::TensorProto wrong;
  wrong.set_data_type(onnx::TensorProto::FLOAT);
  wrong.add_dims(2);
  wrong.set_raw_data(std::string(7, '\0'));
  absl::StatusOr<Tensor> bad = TensorFromProto(wrong, "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("raw_data has 7 bytes, expected 8"), std::string::npos) << bad.status();

  onnx::TensorProto str;
  str.set_data_type(onnx::TensorProto::STRING);
  EXPECT_EQ(TensorFromProto(str, "s").status().code(), absl::StatusCode::kUnimplemented);
}

TEST(OnnxExportTest, SaveRefusesToOverwriteTheInput) {
  const fs::path dir = fs::path(getenv("TEST_TMPDIR")) / "save";
  fs::create_directories(dir);
  const std::string path = (dir / "m.onnx").string();
  std::ofstream(path, std::ios::binary) << Opset9Model().SerializeAsString();
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, LoadModel(path));
  const auto size_before = fs::file_size(path);
  absl::Status s = SaveModel(model, path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fs::file_size(path), size_before);
  const std::string out = (dir / "out.onnx").string();
  QFUSE_ASSERT_OK(SaveModel(model, out));
  QFUSE_ASSERT_OK_AND_ASSIGN(Model again, LoadModel(out));
  QFUSE_EXPECT_OK(CompareGraphs(*model.graph, *again.graph));
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
}

}  // namespace
}  // namespace qfuse::ir
