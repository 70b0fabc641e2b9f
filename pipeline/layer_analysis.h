// Per-layer quantization error: for each quantized unit (or op at fusion levels bn and
// none), the SQNR and cosine of its output against the float graph on the same inputs,
// both accumulated (the whole model int8) and isolated (only that layer int8, float
// elsewhere); and which layers to keep in float for the largest gain.
#ifndef QFUSE_PIPELINE_LAYER_ANALYSIS_H_
#define QFUSE_PIPELINE_LAYER_ANALYSIS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/calibration_table.h"
#include "ir/model.h"
#include "quant/qdq_converter.h"
#include "runtime/executor.h"

namespace qfuse::pipeline {

struct LayerError {
  std::string node;    // node name in the fused float graph
  std::string kind;    // "Conv+Add+Relu unit", "Add", ...
  std::string output;  // its output value
  double sqnr_accumulated = 0, cosine_accumulated = 0;
  double sqnr_isolated = 0, cosine_isolated = 0;
  // With --suggest_keep_float: the model's output SQNR with only this layer kept float (the
  // rest int8), minus the all-int8 figure; NaN when not measured or no output is FLOAT.
  double fallback_gain_db = std::numeric_limits<double>::quiet_NaN();
};

struct LayerAnalysis {
  std::vector<LayerError> layers;  // worst accumulated SQNR first
  // Greedy keep-float suggestion: the layers whose float fallback alone raises the output SQNR,
  // best first (at most 4K tried), each added only if it raises the SQNR of the layers chosen
  // before it, up to K; and the output SQNR with none / with all of them kept float (never
  // below none).
  std::vector<std::string> suggested_keep_float;
  double output_sqnr_db = 0;
  double output_sqnr_with_suggestion_db = 0;
  int64_t samples = 0;  // the evaluation samples analysed
  // With the suggestion: nodes the fallback runs ran (only what each fallback changes), and the
  // nodes of the fallback graphs (what whole runs would have run).
  int64_t fallback_nodes_run = 0;
  int64_t fallback_nodes = 0;
};

// The greedy choice behind LayerAnalysis::suggested_keep_float. `candidates`: (output SQNR gain
// of the layer's fallback alone, layer), best first; `sqnr_with`: the output SQNR with a set of
// layers kept float. Tries the candidates with a positive gain in order (at most 4k; none when
// k <= 0), keeping each that raises the SQNR of those kept before it, until k are kept or the
// SQNR is infinite: fallbacks that help
// alone can cancel or hurt together (PaddleOCR's recogniser: four that each helped gave
// 14.31 dB together against 14.60 dB all int8).
struct KeepFloatChoice {
  std::vector<std::string> layers;
  double output_sqnr_db = 0;  // with `layers` kept float; the all-int8 figure when none is kept
};
absl::StatusOr<KeepFloatChoice> ChooseKeepFloat(
    const std::vector<std::pair<double, std::string>>& candidates, int k, double none_db,
    const std::function<absl::StatusOr<double>(const std::set<std::string>&)>& sqnr_with);

struct LayerAnalysisOptions {
  int suggest_keep_float = 0;
  runtime::ExecutorOptions executor;  // integer_kernels must be off: Q/DQ run as float ops, values keep their names
  bool show_progress = false;         // a progress line with ETA per analysed layer (stderr)
  std::string label = "analyze";
};

// `fused` is the calibrated float graph (before conversion); `inputs` one batch of
// evaluation samples.
absl::StatusOr<LayerAnalysis> AnalyzeLayers(const ir::Model& fused, const calib::CalibrationTable& table,
                                            const quant::ConvertOptions& convert,
                                            const std::vector<ir::NamedTensor>& inputs,
                                            const LayerAnalysisOptions& options);

// A copy of `fused` (graph and opset) converted to Q/DQ with `convert`.
absl::StatusOr<ir::Model> QuantizedCopy(const ir::Model& fused, const calib::CalibrationTable& table,
                                        const quant::ConvertOptions& convert);

// A short human-readable kind of a node: "Conv+Add+Relu unit", "MaxPool".
std::string LayerKind(const ir::Node& node);

}  // namespace qfuse::pipeline

#endif  // QFUSE_PIPELINE_LAYER_ANALYSIS_H_
