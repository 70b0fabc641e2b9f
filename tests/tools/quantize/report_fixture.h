// A hand-built QuantizeResult (two fusion levels, a node named like an HTML tag) for the
// report tests and for report_sample, which writes it out for a look in a browser.
#ifndef QFUSE_TESTS_TOOLS_QUANTIZE_REPORT_FIXTURE_H_
#define QFUSE_TESTS_TOOLS_QUANTIZE_REPORT_FIXTURE_H_

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "numerics/threshold_scale.h"
#include "pipeline/quantize_pipeline.h"

namespace qfuse::testing {

inline pipeline::QuantizeConfig SampleConfig() {
  pipeline::QuantizeConfig config;
  config.model_path = "models/resnet_small/model.onnx";
  config.calib_samples = 512;
  config.threshold.method = calib::CalibrationMethod::kEntropy;
  config.levels = {fusion::FusionLevel::kFull, fusion::FusionLevel::kNone};
  config.convert.keep_float = {"fc"};
  config.output_dir = "/tmp/out/quantize-resnet_small";
  config.suggest_keep_float = 2;
  return config;
}

inline calib::CalibrationTable SampleTable(int tensors) {
  calib::CalibrationTable table;
  table.method = "entropy";
  table.samples = 512;
  table.fingerprint = "0123456789abcdef";
  for (int i = 0; i < tensors; ++i) {
    calib::TensorRange t;
    t.name = absl::StrCat("act_", i < 10 ? "0" : "", i);
    t.min = i % 3 == 0 ? -1.5f - 0.25f * i : 0.f;
    t.max = 2.f + 0.5f * i;
    t.threshold = t.max * (i % 4 == 1 ? 0.625f : 1.f);
    t.scale = numerics::ScaleOfThreshold(t.threshold, numerics::kInt8SymmetricMax);
    t.method = table.method;
    if (i == 1) t.bounded_by = "Sigmoid";  // its threshold lowered to a saturating reader's bound
    table.tensors.push_back(t);
  }
  // Read from a TensorRT cache: no observed range.
  table.tensors.push_back({"act_cache_only", 3.175f, 0.025f, std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::quiet_NaN()});
  return table;
}

// `layers` rows, worst accumulated SQNR first; the first one's name is an HTML tag.
inline pipeline::LayerAnalysis SampleAnalysis(int layers, double worst_db) {
  pipeline::LayerAnalysis a;
  for (int i = 0; i < layers; ++i) {
    pipeline::LayerError e;
    e.node = i == 0 ? "<script>alert('x')</script>" : absl::StrCat("stage", i / 3, "/conv", i % 3);
    e.kind = i % 3 == 2 ? "Conv+Add+Relu unit" : "Conv+Relu unit";
    e.output = absl::StrCat(e.node, "_out");
    e.sqnr_accumulated = worst_db + 1.75 * i;
    e.cosine_accumulated = 1 - std::pow(10.0, -e.sqnr_accumulated / 10) / 2;
    e.sqnr_isolated = i == layers - 1 ? std::numeric_limits<double>::infinity() : e.sqnr_accumulated + 6 + (i % 4);
    e.cosine_isolated = 1 - std::pow(10.0, -e.sqnr_isolated / 10) / 2;
    if (i < 2) e.fallback_gain_db = 2.5 - i;  // measured for the first two only (NaN: not measured)
    a.layers.push_back(e);
  }
  a.output_sqnr_db = worst_db + 4;
  a.samples = 16;
  if (layers > 1) {
    a.suggested_keep_float = {a.layers[0].node, a.layers[1].node};
    a.output_sqnr_with_suggestion_db = worst_db + 9.5;
  }
  return a;
}

// Labels when `labels`; otherwise top-1 is -1 everywhere.
inline pipeline::QuantizeResult SampleResult(bool labels) {
  pipeline::QuantizeResult r;
  r.model_path = "models/resnet_small/model.onnx";
  r.calib_samples = 512;
  r.eval_samples = 10000;
  r.fp32_top1 = labels ? 91.23 : -1;
  r.fp32_seconds = 3.5;

  pipeline::LevelResult full;
  full.level = fusion::FusionLevel::kFull;
  full.model_file = "/tmp/out/quantize-resnet_small/model_int8_full.onnx";
  full.table_file = "/tmp/out/quantize-resnet_small/calibration_full.json";
  full.float_nodes = 14;
  full.conversion = {11, 9, 2, 1};
  full.top1 = labels ? 90.87 : -1;
  full.suggestion_top1 = labels ? 91.04 : -1;
  full.suggestion_agreement = 99.12;
  full.suggestion_sqnr_db = 29.875;
  full.agreement = 98.76;
  full.sqnr_db = 27.4123;
  full.cosine = 0.998765;
  full.seconds = {0.11, 0.02, 1.25, 0.06, 2.75};
  full.table = SampleTable(12);
  full.analysis = SampleAnalysis(9, 21.5);
  r.levels.push_back(full);

  pipeline::LevelResult none;
  none.level = fusion::FusionLevel::kNone;
  none.model_file = "/tmp/out/quantize-resnet_small/model_int8_none.onnx";
  none.table_file = "/tmp/out/quantize-resnet_small/calibration_none.json";
  none.float_nodes = 31;
  none.conversion = {27, 9, 0, 1};
  none.top1 = labels ? 88.02 : -1;
  none.suggestion_top1 = labels ? 89.5 : -1;
  none.suggestion_agreement = 97.25;
  none.suggestion_sqnr_db = 21.5;
  none.agreement = 95.4;
  none.sqnr_db = 19.875;
  none.cosine = 0.99211;
  none.seconds = {0.1, 0.0, 1.5, 0.08, 3.25};
  none.table = SampleTable(20);
  none.analysis = SampleAnalysis(16, 12.25);
  r.levels.push_back(none);
  return r;
}

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TOOLS_QUANTIZE_REPORT_FIXTURE_H_
