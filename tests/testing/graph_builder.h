// Terse construction of small test graphs: float inputs, seeded random constants, and
// nodes with one output each.
#ifndef QFUSE_TESTS_TESTING_GRAPH_BUILDER_H_
#define QFUSE_TESTS_TESTING_GRAPH_BUILDER_H_

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/model.h"

namespace qfuse::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(uint32_t seed = 1) : rng_(seed) { model_.opset = 13; model_.ir_version = 7; }

  ir::Graph& graph() { return *model_.graph; }
  ir::Model& model() { return model_; }

  // A FLOAT input; a negative dim becomes the symbolic dim "batch".
  ir::Value* Input(const std::string& name, const std::vector<int64_t>& dims) {
    ir::TensorType type{ir::DataType::kFloat32, {}, {}};
    type.shape.rank_known = true;
    for (int64_t d : dims) type.shape.dims.push_back(d < 0 ? ir::Dim::Symbolic("batch") : ir::Dim::Known(d));
    return *graph().AddInput(name, type);
  }
  // Uniform random FLOAT constant in [low, high).
  ir::Value* Random(const std::string& name, const std::vector<int64_t>& dims, float low = -1.f, float high = 1.f) {
    ir::Tensor t(ir::DataType::kFloat32, dims);
    std::uniform_real_distribution<float> u(low, high);
    for (float& v : t.mutable_values<float>()) v = u(rng_);
    return *graph().AddConstant(name, std::move(t));
  }
  ir::Value* Floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    return *graph().AddConstant(name, ir::Tensor::FromVector<float>(dims, values));
  }
  ir::Value* Ints(const std::string& name, const std::vector<int64_t>& values) {
    return *graph().AddConstant(name, ir::Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values));
  }
  // Adds a node with one FLOAT output named `out` with the given dims (empty: unknown).
  ir::Value* Op(const std::string& op, std::vector<ir::Value*> inputs, const std::string& out,
                const std::vector<int64_t>& out_dims = {}, ir::AttributeMap attrs = {}) {
    ir::Node* n = *graph().AddNode(op, absl::StrCat(op, "_", out), inputs, {out}, std::move(attrs));
    ir::TensorType& t = n->output(0)->mutable_type();
    t.dtype = ir::DataType::kFloat32;
    if (!out_dims.empty()) {
      t.shape.rank_known = true;
      for (int64_t d : out_dims) t.shape.dims.push_back(d < 0 ? ir::Dim::Symbolic("batch") : ir::Dim::Known(d));
    }
    return n->output(0);
  }
  // BatchNormalization over `channels` with random, well-conditioned statistics.
  ir::Value* BatchNorm(ir::Value* x, int64_t channels, const std::string& out, const std::vector<int64_t>& out_dims) {
    return Op("BatchNormalization",
              {x, Random(out + "_gamma", {channels}, 0.5f, 1.5f), Random(out + "_beta", {channels}),
               Random(out + "_mean", {channels}), Random(out + "_var", {channels}, 0.5f, 2.f)},
              out, out_dims);
  }
  void Output(ir::Value* v) { (void)graph().MarkOutput(v); }

  static ir::AttributeMap Attrs(std::initializer_list<std::pair<const std::string, ir::AttributeValue>> list) {
    ir::AttributeMap m;
    for (const auto& [k, v] : list) m.Set(k, v);
    return m;
  }

 private:
  ir::Model model_;
  std::mt19937 rng_;
};

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_GRAPH_BUILDER_H_
