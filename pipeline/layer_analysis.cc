#include "pipeline/layer_analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "calib/progress.h"
#include "ir/fused_unit.h"
#include "pipeline/evaluation.h"

namespace qfuse::pipeline {
namespace {

using ValueMap = std::map<std::string, ir::Tensor>;

// Runs `graph` with every node output computed as the graph has it (`run` says what to show
// or keep of them); returns the graph's outputs.
absl::StatusOr<std::vector<ir::NamedTensor>> RunAsWritten(const ir::Graph& graph,
                                                          const std::vector<ir::NamedTensor>& inputs,
                                                          const runtime::ExecutorOptions& options,
                                                          const runtime::RunOptions& run) {
  runtime::ExecutorOptions as_written = options;
  as_written.fuse_float_chains = false;
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(graph, as_written));
  return exec->Run(inputs, run);
}

// Runs `graph` and keeps its outputs plus every FLOAT node output named in `wanted`
// (every one when `wanted` is null), handed over by the executor when the run is done with
// each: no copies.
absl::StatusOr<ValueMap> RunAndCollect(const ir::Graph& graph, const std::vector<ir::NamedTensor>& inputs,
                                       const runtime::ExecutorOptions& options,
                                       const std::set<std::string>* wanted = nullptr) {
  ValueMap values;
  runtime::RunOptions run;
  run.kept = &values;
  run.keep = [&](const ir::Value& v, const ir::Tensor& t) {
    return t.dtype() == ir::DataType::kFloat32 && (wanted == nullptr || wanted->count(v.name()) > 0);
  };
  QFUSE_ASSIGN_OR_RETURN(auto outputs, RunAsWritten(graph, inputs, options, run));
  for (auto& out : outputs) values[out.name] = std::move(out.tensor);
  return values;
}

// SQNR and cosine of a value against the float graph's.
struct Agreement {
  double sqnr = 0, cosine = 0;
};

// Runs `graph` and compares each FLOAT value that `reference` holds with it as the run
// computes it, keeping the two figures rather than the tensor; the graph's outputs are kept in
// `outputs` (those that are not node outputs, such as a constant, are compared there), and
// with `quantized` every QuantizeLinear output of an activation (8-bit: a quarter of a float
// value's bytes).
absl::StatusOr<std::map<std::string, Agreement>> RunAndCompare(const ir::Graph& graph,
                                                               const std::vector<ir::NamedTensor>& inputs,
                                                               const runtime::ExecutorOptions& options,
                                                               const ValueMap& reference, ValueMap* outputs,
                                                               ValueMap* quantized = nullptr) {
  std::map<std::string, Agreement> agreement;
  const auto compare = [&](const std::string& name, const ir::Tensor& t) {
    if (t.dtype() != ir::DataType::kFloat32 || agreement.count(name) > 0) return;
    const auto ref = reference.find(name);
    if (ref == reference.end()) return;
    Agreement& a = agreement[name];
    SqnrAndCosine(ref->second.values<float>(), t.values<float>(), &a.sqnr, &a.cosine);
  };
  runtime::RunOptions run;
  run.observer = [&](const ir::Value& v, const ir::Tensor& t) { compare(v.name(), t); };
  if (quantized != nullptr) {
    run.kept = quantized;
    run.keep = [](const ir::Value& v, const ir::Tensor&) {  // activations' only: not a weight's
      const ir::Node* q = v.producer();
      return q != nullptr && q->op_type() == "QuantizeLinear" && q->input(0) != nullptr && !q->input(0)->is_constant();
    };
  }
  QFUSE_ASSIGN_OR_RETURN(auto results, RunAsWritten(graph, inputs, options, run));
  for (auto& out : results) {
    compare(out.name, out.tensor);
    (*outputs)[out.name] = std::move(out.tensor);
  }
  return agreement;
}

// Runs `graph` and keeps only its outputs.
absl::StatusOr<ValueMap> RunOutputs(const ir::Graph& graph, const std::vector<ir::NamedTensor>& inputs,
                                    const runtime::ExecutorOptions& options) {
  const std::set<std::string> none;
  return RunAndCollect(graph, inputs, options, &none);
}

// The part of `graph` that computes `outputs` from values held already, as a graph of its own
// with those values as its inputs (`held` gives a held value or null; graph inputs come from
// `inputs`). Two uses:
// - Isolated figures: for a copy of the float graph with one layer quantized, the held values
//   are the float run's; upstream of that layer the copy computes every node as the float graph
//   does, so the part's output is the whole copy's, for the work of the layer and its Q/DQ nodes.
//   (A part without Q/DQ is not run: a float op run apart from a float producer may pick another
//   layout, and with it other float rounding, than in the graph; layer_analysis_test.)
// - Fallbacks (RunFallback): the held values are the all-int8 run's QuantizeLinear outputs, which
//   the simulated run holds in the plain layout, as the part's inputs are.
// The part copies each held value it reads.
struct GraphPart {
  std::unique_ptr<ir::Graph> graph;
  std::vector<ir::NamedTensor> inputs;
};

using HeldValue = std::function<const ir::Tensor*(const std::string& name)>;

absl::StatusOr<GraphPart> PartComputing(const ir::Graph& graph, const std::vector<std::string>& outputs,
                                        const HeldValue& held, const std::vector<ir::NamedTensor>& inputs) {
  std::set<const ir::Node*> nodes;
  std::vector<const ir::Node*> pending;
  std::vector<const ir::Value*> outs;
  for (const std::string& output : outputs) {
    const ir::Value* out = graph.FindValue(output);
    if (out == nullptr || out->producer() == nullptr) {
      return absl::InternalError(absl::StrCat("layer analysis: no node computes \"", output, "\""));
    }
    outs.push_back(out);
    if (nodes.insert(out->producer()).second) pending.push_back(out->producer());
  }
  const std::set<std::string> output_names(outputs.begin(), outputs.end());
  std::set<const ir::Value*> seen;
  std::vector<const ir::Value*> cut;
  while (!pending.empty()) {
    const ir::Node* node = pending.back();
    pending.pop_back();
    for (const ir::Value* v : node->inputs()) {
      if (v == nullptr || v->is_constant() || !seen.insert(v).second) continue;
      if (v->is_graph_input() || (output_names.count(v->name()) == 0 && held(v->name()) != nullptr)) {
        cut.push_back(v);
        continue;
      }
      if (v->producer() == nullptr) {
        return absl::InternalError(absl::StrCat("layer analysis: no value for \"", v->name(), "\""));
      }
      if (nodes.insert(v->producer()).second) pending.push_back(v->producer());
    }
  }
  GraphPart part;
  part.graph = std::make_unique<ir::Graph>();
  std::map<const ir::Value*, ir::Value*> mapped;
  for (const ir::Value* v : cut) {
    QFUSE_ASSIGN_OR_RETURN(mapped[v], part.graph->AddInput(v->name(), v->type()));
    if (!v->is_graph_input()) {
      part.inputs.push_back({v->name(), *held(v->name())});
      continue;
    }
    const auto given =
        std::find_if(inputs.begin(), inputs.end(), [&](const ir::NamedTensor& t) { return t.name == v->name(); });
    if (given == inputs.end()) return absl::InternalError(absl::StrCat("layer analysis: no input \"", v->name(), "\""));
    part.inputs.push_back(*given);
  }
  QFUSE_ASSIGN_OR_RETURN(const std::vector<ir::Node*> order, graph.TopologicalOrder());
  for (const ir::Node* node : order) {
    if (nodes.count(node) == 0) continue;
    std::vector<ir::Value*> node_inputs;
    for (const ir::Value* v : node->inputs()) {
      if (v == nullptr) {
        node_inputs.push_back(nullptr);
        continue;
      }
      auto m = mapped.find(v);
      if (m == mapped.end()) {  // a constant, first read here
        QFUSE_ASSIGN_OR_RETURN(ir::Value * c, part.graph->AddConstant(v->name(), *v->initializer()));
        m = mapped.emplace(v, c).first;
      }
      node_inputs.push_back(m->second);
    }
    std::vector<std::string> names;  // "" for an omitted optional output, as the importer has it
    for (const ir::Value* o : node->outputs()) names.push_back(o == nullptr ? "" : o->name());
    QFUSE_ASSIGN_OR_RETURN(ir::Node * copy, part.graph->AddNode(node->op_type(), node->name(), node_inputs, names,
                                                                node->attrs(), node->domain()));
    for (size_t i = 0; i < names.size(); ++i) {
      if (node->output(i) == nullptr || copy->output(i) == nullptr) continue;
      copy->output(i)->mutable_type() = node->output(i)->type();
      mapped[node->output(i)] = copy->output(i);
    }
  }
  for (const ir::Value* out : outs) QFUSE_RETURN_IF_ERROR(part.graph->MarkOutput(mapped.at(out)));
  return part;
}

// Names of the values that `graph` computes exactly as `base` computes the value of the same
// name: by a node of the same name, op, domain, attributes and outputs (names and declared types,
// which some kernels plan from), on inputs that are
// the same graph inputs, bit-equal constants or such values (so the same run gives the same
// bits). A copy converted with one more layer kept float computes its upstream as the all-int8
// copy does; the changed layer and everything it reaches are not in the set.
absl::StatusOr<std::set<std::string>> ValuesComputedAsIn(const ir::Graph& graph, const ir::Graph& base) {
  std::set<std::string> same;
  const auto same_input = [&](const ir::Value* v, const ir::Value* b) {
    if (v == nullptr || b == nullptr) return v == b;
    if (v->name() != b->name()) return false;
    if (v->is_constant() || b->is_constant()) {
      return v->is_constant() && b->is_constant() &&
             (v->initializer() == b->initializer() || v->initializer()->BitwiseEqual(*b->initializer()));
    }
    if (v->is_graph_input() || b->is_graph_input()) return v->is_graph_input() && b->is_graph_input();
    return same.count(v->name()) > 0;
  };
  QFUSE_ASSIGN_OR_RETURN(const std::vector<ir::Node*> order, graph.TopologicalOrder());
  for (const ir::Node* node : order) {
    const ir::Value* first = node->output(0);
    const ir::Value* base_first = first == nullptr ? nullptr : base.FindValue(first->name());
    const ir::Node* b = base_first == nullptr ? nullptr : base_first->producer();
    if (b == nullptr || b->name() != node->name() || b->op_type() != node->op_type() || b->domain() != node->domain() ||
        !(b->attrs() == node->attrs()) || b->inputs().size() != node->inputs().size() ||
        b->outputs().size() != node->outputs().size()) {
      continue;
    }
    bool equal = true;
    for (size_t i = 0; equal && i < node->outputs().size(); ++i) {
      const ir::Value* o = node->output(i);
      const ir::Value* bo = b->output(i);
      equal =
          (o == nullptr) == (bo == nullptr) && (o == nullptr || (o->name() == bo->name() && o->type() == bo->type()));
    }
    for (size_t i = 0; equal && i < node->inputs().size(); ++i) equal = same_input(node->input(i), b->input(i));
    if (!equal) continue;
    for (const ir::Value* o : node->outputs()) {
      if (o != nullptr) same.insert(o->name());
    }
  }
  return same;
}

// Whether `graph` holds a QuantizeLinear or DequantizeLinear node.
bool HasQdq(const ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes()) {
    if (n->op_type() == "QuantizeLinear" || n->op_type() == "DequantizeLinear") return true;
  }
  return false;
}

// The outputs of `fallback` (the all-int8 copy `all_int8` with more layers kept float), as
// a whole run of it gives them, from a run of only the nodes that it computes otherwise than
// `all_int8` and those they reach: the rest is read from the all-int8 run (`int8_outputs`,
// and `int8_quantized`, its QuantizeLinear outputs, where the changed part starts). Adds the
// nodes it ran to `nodes_run`.
absl::StatusOr<ValueMap> RunFallback(const ir::Graph& fallback, const ir::Graph& all_int8, const ValueMap& int8_outputs,
                                     const ValueMap& int8_quantized, const std::vector<ir::NamedTensor>& inputs,
                                     const runtime::ExecutorOptions& options, int64_t* nodes_run) {
  QFUSE_ASSIGN_OR_RETURN(const std::set<std::string> same, ValuesComputedAsIn(fallback, all_int8));
  ValueMap values;
  std::vector<std::string> changed;
  for (const ir::Value* out : fallback.outputs()) {
    const auto held = int8_outputs.find(out->name());
    if (out->producer() == nullptr || (same.count(out->name()) > 0 && held != int8_outputs.end())) {
      if (held != int8_outputs.end()) values.emplace(out->name(), held->second);
      continue;
    }
    changed.push_back(out->name());
  }
  if (changed.empty()) return values;
  const HeldValue held_int8 = [&](const std::string& name) -> const ir::Tensor* {
    if (same.count(name) == 0) return nullptr;
    const auto it = int8_quantized.find(name);
    return it == int8_quantized.end() ? nullptr : &it->second;
  };
  QFUSE_ASSIGN_OR_RETURN(GraphPart part, PartComputing(fallback, changed, held_int8, inputs));
  *nodes_run += part.graph->num_nodes();
  QFUSE_ASSIGN_OR_RETURN(ValueMap part_values, RunOutputs(*part.graph, part.inputs, options));
  for (auto& [name, tensor] : part_values) values[name] = std::move(tensor);
  return values;
}

double OutputSqnr(const ir::Graph& graph, const ValueMap& reference, const ValueMap& actual) {
  double worst = std::numeric_limits<double>::infinity();
  for (const ir::Value* out : graph.outputs()) {
    auto r = reference.find(out->name());
    auto a = actual.find(out->name());
    // Only FLOAT outputs have an SQNR (an ArgMax's indices do not).
    if (r == reference.end() || a == actual.end() || r->second.dtype() != ir::DataType::kFloat32 ||
        a->second.dtype() != ir::DataType::kFloat32) {
      continue;
    }
    worst = std::min(worst, SqnrDb(r->second.values<float>(), a->second.values<float>()));
  }
  return worst;
}

}  // namespace

absl::StatusOr<ir::Model> QuantizedCopy(const ir::Model& fused, const calib::CalibrationTable& table,
                                        const quant::ConvertOptions& convert) {
  ir::Model model;
  model.opset = fused.opset;
  model.graph = fused.graph->Clone();
  QFUSE_RETURN_IF_ERROR(quant::ConvertToQdq(&model, table, convert).status());
  return model;
}

std::string LayerKind(const ir::Node& node) {
  if (!ir::IsUnit(node)) return node.op_type();
  absl::StatusOr<ir::UnitSpec> spec = ir::ReadUnitSpec(node);
  if (!spec.ok()) return node.op_type();
  std::string kind = ir::UnitBaseOpName(spec->base_op);
  if (ir::BiasFollowsBase(spec->base_op) && node.input(ir::kUnitBias) != nullptr) kind += "+Bias";
  if (node.input(ir::kUnitResidual) != nullptr) kind += "+Add";
  switch (spec->activation) {
    case ir::UnitActivation::kRelu: kind += "+Relu"; break;
    case ir::UnitActivation::kRelu6: kind += "+ReLU6"; break;
    case ir::UnitActivation::kClip: kind += "+Clip"; break;
    case ir::UnitActivation::kHardSwish: kind += "+HardSwish"; break;
    case ir::UnitActivation::kHardSigmoid: kind += "+HardSigmoid"; break;
    case ir::UnitActivation::kSigmoid: kind += "+Sigmoid"; break;
    case ir::UnitActivation::kSilu: kind += "+SiLU"; break;
    case ir::UnitActivation::kLeakyRelu: kind += "+LeakyRelu"; break;
    case ir::UnitActivation::kNone: break;
  }
  return kind + " unit";
}

absl::StatusOr<KeepFloatChoice> ChooseKeepFloat(
    const std::vector<std::pair<double, std::string>>& candidates, int k, double none_db,
    const std::function<absl::StatusOr<double>(const std::set<std::string>&)>& sqnr_with) {
  KeepFloatChoice choice;
  choice.output_sqnr_db = none_db;
  std::set<std::string> kept;
  int trials = 0;
  for (const auto& [gain, name] : candidates) {
    if (trials >= 4 * k || static_cast<int>(choice.layers.size()) >= k ||
        choice.output_sqnr_db == std::numeric_limits<double>::infinity()) {
      break;
    }
    if (!(gain > 0)) continue;  // no help alone (or NaN: no FLOAT output to compare)
    ++trials;
    kept.insert(name);
    QFUSE_ASSIGN_OR_RETURN(const double sqnr, sqnr_with(kept));
    if (sqnr > choice.output_sqnr_db) {
      choice.output_sqnr_db = sqnr;
      choice.layers.push_back(name);
    } else {
      kept.erase(name);
    }
  }
  return choice;
}

absl::StatusOr<LayerAnalysis> AnalyzeLayers(const ir::Model& fused, const calib::CalibrationTable& table,
                                            const quant::ConvertOptions& convert,
                                            const std::vector<ir::NamedTensor>& inputs,
                                            const LayerAnalysisOptions& options) {
  if (options.executor.integer_kernels) {
    // Lowered to integer kernels, values lose their names (and parts would lower apart).
    return absl::InvalidArgumentError("layer analysis runs Q/DQ simulated in float: integer_kernels must be off");
  }
  QFUSE_ASSIGN_OR_RETURN(ValueMap reference, RunAndCollect(*fused.graph, inputs, options.executor));
  QFUSE_ASSIGN_OR_RETURN(ir::Model all_int8, QuantizedCopy(fused, table, convert));
  // The whole-int8 run is compared value by value as it goes: keeping its values too would
  // double the analysis' memory (DenseNet-121, 16 samples of 128x128: 1.5 GiB more peak RSS).
  ValueMap int8_outputs;
  // With the suggestion: the whole-int8 run's 8-bit values too, from which each layer's fallback
  // runs only what that layer changes (the layer and what it reaches).
  const bool suggest = options.suggest_keep_float > 0;
  ValueMap int8_quantized;
  QFUSE_ASSIGN_OR_RETURN(const auto accumulated, RunAndCompare(*all_int8.graph, inputs, options.executor, reference,
                                                               &int8_outputs, suggest ? &int8_quantized : nullptr));
  LayerAnalysis analysis;
  analysis.output_sqnr_db = OutputSqnr(*fused.graph, reference, int8_outputs);
  if (!inputs.empty() && !inputs[0].tensor.dims().empty()) analysis.samples = inputs[0].tensor.dims()[0];

  // Layers: nodes of the float graph with a FLOAT output that quantization touches.
  std::vector<const ir::Node*> layers;
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, fused.graph->TopologicalOrder());
  for (const ir::Node* n : order) {
    if (convert.keep_float.count(n->name()) > 0 || n->output(0) == nullptr ||
        n->output(0)->type().dtype != ir::DataType::kFloat32) {
      continue;
    }
    layers.push_back(n);
  }
  quant::ConvertOptions all_float = convert;  // every layer kept float
  for (const ir::Node* n : layers) all_float.keep_float.insert(n->name());
  std::vector<std::pair<double, std::string>> fallback_gain;
  std::unique_ptr<calib::ProgressBar> progress;
  if (options.show_progress) {
    progress = std::make_unique<calib::ProgressBar>(options.label, layers.size());
    progress->set_unit("layers");
  }
  int64_t analysed = 0;
  for (const ir::Node* n : layers) {
    if (progress) progress->Update(analysed++);
    LayerError e;
    e.node = n->name();
    e.kind = LayerKind(*n);
    e.output = n->output(0)->name();
    const ir::Tensor& ref = reference.at(e.output);
    auto acc = accumulated.find(e.output);
    if (acc == accumulated.end()) continue;
    e.sqnr_accumulated = acc->second.sqnr;
    e.cosine_accumulated = acc->second.cosine;
    // Isolated: only this layer quantized.
    quant::ConvertOptions only = all_float;
    only.keep_float.erase(n->name());
    QFUSE_ASSIGN_OR_RETURN(ir::Model isolated_model, QuantizedCopy(fused, table, only));
    const std::set<std::string> wanted = {e.output};
    const HeldValue held_float = [&](const std::string& name) -> const ir::Tensor* {
      const auto it = reference.find(name);
      return it == reference.end() ? nullptr : &it->second;
    };
    QFUSE_ASSIGN_OR_RETURN(GraphPart part, PartComputing(*isolated_model.graph, {e.output}, held_float, inputs));
    ValueMap isolated;
    if (HasQdq(*part.graph)) {
      QFUSE_ASSIGN_OR_RETURN(isolated, RunAndCollect(*part.graph, part.inputs, options.executor, &wanted));
    } else {  // quantizing this layer alone adds no Q/DQ before its output: the float graph's output
      isolated.emplace(e.output, ref);
    }
    const ir::Tensor& iso = isolated.at(e.output);
    SqnrAndCosine(ref.values<float>(), iso.values<float>(), &e.sqnr_isolated, &e.cosine_isolated);
    if (suggest) {
      // This layer alone in float, the rest int8.
      quant::ConvertOptions fallback = convert;
      fallback.keep_float.insert(n->name());
      QFUSE_ASSIGN_OR_RETURN(ir::Model fallback_model, QuantizedCopy(fused, table, fallback));
      QFUSE_ASSIGN_OR_RETURN(ValueMap values,
                             RunFallback(*fallback_model.graph, *all_int8.graph, int8_outputs, int8_quantized, inputs,
                                         options.executor, &analysis.fallback_nodes_run));
      analysis.fallback_nodes += fallback_model.graph->num_nodes();
      e.fallback_gain_db = OutputSqnr(*fused.graph, reference, values) - analysis.output_sqnr_db;
      fallback_gain.emplace_back(e.fallback_gain_db, n->name());
    }
    analysis.layers.push_back(e);
  }
  if (progress) {
    progress->Update(static_cast<int64_t>(layers.size()));
    progress->Finish();
  }
  std::stable_sort(analysis.layers.begin(), analysis.layers.end(),
                   [](const LayerError& a, const LayerError& b) { return a.sqnr_accumulated < b.sqnr_accumulated; });
  if (options.suggest_keep_float > 0) {
    // Only gains that are numbers can be ordered (NaN when no output is FLOAT).
    fallback_gain.erase(
        std::remove_if(fallback_gain.begin(), fallback_gain.end(), [](const auto& g) { return std::isnan(g.first); }),
        fallback_gain.end());
    std::stable_sort(fallback_gain.begin(), fallback_gain.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const auto sqnr_with = [&](const std::set<std::string>& kept) -> absl::StatusOr<double> {
      quant::ConvertOptions trial = convert;
      trial.keep_float.insert(kept.begin(), kept.end());
      QFUSE_ASSIGN_OR_RETURN(ir::Model trial_model, QuantizedCopy(fused, table, trial));
      int64_t nodes_run = 0;
      QFUSE_ASSIGN_OR_RETURN(ValueMap values, RunFallback(*trial_model.graph, *all_int8.graph, int8_outputs,
                                                          int8_quantized, inputs, options.executor, &nodes_run));
      return OutputSqnr(*fused.graph, reference, values);
    };
    QFUSE_ASSIGN_OR_RETURN(KeepFloatChoice choice, ChooseKeepFloat(fallback_gain, options.suggest_keep_float,
                                                                   analysis.output_sqnr_db, sqnr_with));
    analysis.suggested_keep_float = std::move(choice.layers);
    analysis.output_sqnr_with_suggestion_db = choice.output_sqnr_db;
  }
  return analysis;
}

}  // namespace qfuse::pipeline
