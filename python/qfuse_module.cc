// The Python module `qfuse`: quantize (python/quantize.cc), Session (qfuse's reference
// runtime) and compare (two models on one dataset). NumPy is imported on first use of an
// array, not by `import qfuse`. Long C++ calls run without the GIL.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "data/data_source.h"
#include "ir/onnx_import.h"
#include "pipeline/model_compare.h"
#include "python/conversions.h"
#include "python/quantize.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"

namespace qfuse::python {
namespace {

constexpr char kSessionDoc[] = R"doc(Session(path)

A model loaded on qfuse's reference runtime, as `bazel run //tools:run` runs it: a float model
as it is, an int8 QDQ model lowered to qfuse's integer kernels (exact integer arithmetic).

run(feeds) takes {input name: numpy array} with every model input and returns {output name:
numpy array} in the model's output order. Each input array is copied once (qfuse's tensors
own 64-byte-aligned, padded buffers that its SIMD kernels rely on, so they cannot wrap NumPy's
memory), converted to the input's dtype in that copy ('same_kind' casting). Outputs are not
copied: each array owns the tensor the runtime produced. run() releases the GIL; calls on
one Session are serialised.
input_names, output_names: the model's input and output names, in order.
Errors: FileNotFoundError (no such model file), ValueError (bad model or inputs), RuntimeError.)doc";

constexpr char kCompareDoc[] = R"doc(compare(model_a, model_b, data, *, labels=None, samples=0) -> dict

Runs both models over `data` (a path, or a list of 'input_name:path', spelled as the CLI's
--data: .npy, IDX, image or .pb folder, raw float32) and compares model B's outputs with
model A's (the reference), as `bazel run //tools:compare` does. labels: an IDX label file,
for each model's top-1 accuracy. samples: the first N samples (0: all).

Returns {'samples': N, 'outputs': [{'name_a', 'name_b', 'dims', 'skipped' (why an output was
not compared, else ''), 'top1_agreement', 'sqnr_db', 'cosine', 'max_abs_diff', 'top1_a',
'top1_b' (None without labels)}]}.)doc";

class Session {
 public:
  explicit Session(py::object path) {
    ThrowIfError(runtime::CheckIsaCapEnvironment());
    const std::string file = PathString(path);
    absl::StatusOr<std::unique_ptr<runtime::Executor>> executor;
    {
      py::gil_scoped_release release;
      absl::StatusOr<ir::Model> model = ir::LoadModel(file);
      if (model.ok()) {
        model_ = *std::move(model);
        runtime::ExecutorOptions options;  // integer kernels for QDQ models, as //tools:run
        executor = runtime::Executor::Create(*model_.graph, options);
      } else {
        executor = model.status();
      }
    }
    executor_ = ValueOrThrow(std::move(executor));
  }

  std::vector<std::string> input_names() const { return Names(model_.graph->inputs()); }
  std::vector<std::string> output_names() const { return Names(model_.graph->outputs()); }

  py::dict Run(const py::dict& feeds) {
    std::vector<ir::NamedTensor> inputs;
    for (auto [key, value] : feeds) {
      const std::string name = py::str(key);
      const ir::Value* input = nullptr;
      for (const ir::Value* v : model_.graph->inputs()) {
        if (v->name() == name) input = v;
      }
      if (input == nullptr) {
        throw py::value_error(absl::StrCat("'", name, "' is not an input of the model (inputs: ",
                                           absl::StrJoin(input_names(), ", "), ")"));
      }
      inputs.push_back({name, TensorFromArray(value, input->type().dtype, absl::StrCat("input '", name, "'"))});
    }
    absl::StatusOr<std::vector<ir::NamedTensor>> outputs;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      outputs = executor_->Run(inputs);
    }
    py::dict result;
    for (ir::NamedTensor& out : ValueOrThrow(std::move(outputs))) {
      result[py::str(out.name)] = ArrayFromTensor(std::move(out.tensor));
    }
    return result;
  }

 private:
  static std::vector<std::string> Names(const std::vector<ir::Value*>& values) {
    std::vector<std::string> names;
    for (const ir::Value* v : values) names.push_back(v->name());
    return names;
  }

  ir::Model model_;
  std::unique_ptr<runtime::Executor> executor_;  // runs model_.graph
  std::mutex mu_;
};

py::object OrNone(double percent) { return percent < 0 ? py::object(py::none()) : py::float_(percent); }

py::dict Compare(py::object model_a, py::object model_b, py::object data, py::object labels, int64_t samples) {
  ThrowIfError(runtime::CheckIsaCapEnvironment());
  pipeline::CompareOptions options;
  options.model_a = PathString(model_a);
  options.model_b = PathString(model_b);
  std::vector<std::string> values;
  if (IsPath(data)) {
    values.push_back(PathString(data));
  } else {
    for (py::handle v : data) values.push_back(PathString(v));
  }
  options.data = ValueOrThrow(data::ParseDataSources(values));
  if (samples < 0) throw py::value_error("samples must be >= 0");
  options.max_samples = samples;
  if (!labels.is_none()) options.labels_path = PathString(labels);
  absl::StatusOr<pipeline::ComparisonReport> report;
  {
    py::gil_scoped_release release;
    report = pipeline::CompareModels(options);
  }
  const pipeline::ComparisonReport& r = ValueOrThrow(std::move(report));
  py::list outputs;
  for (const pipeline::OutputComparison& o : r.outputs) {
    outputs.append(py::dict(py::arg("name_a") = o.name_a, py::arg("name_b") = o.name_b, py::arg("dims") = o.dims,
                            py::arg("skipped") = o.skipped, py::arg("top1_agreement") = o.agreement.top1_agreement,
                            py::arg("sqnr_db") = o.agreement.sqnr_db, py::arg("cosine") = o.agreement.cosine,
                            py::arg("max_abs_diff") = o.agreement.max_abs_diff, py::arg("top1_a") = OrNone(o.top1_a),
                            py::arg("top1_b") = OrNone(o.top1_b)));
  }
  return py::dict(py::arg("samples") = r.samples, py::arg("outputs") = outputs);
}

}  // namespace
}  // namespace qfuse::python

PYBIND11_MODULE(qfuse, m) {
  namespace py = pybind11;
  using qfuse::python::Session;
  py::options options;
  options.disable_function_signatures();  // each docstring spells its Python signature
  m.doc() = "qfuse: float ONNX -> int8 QDQ ONNX with fused quantized units, and qfuse's reference runtime.";
  qfuse::python::DefineQuantize(m);
  py::class_<Session>(m, "Session", qfuse::python::kSessionDoc)
      .def(py::init<py::object>(), py::arg("path"))
      .def("run", &Session::Run, py::arg("feeds"), "run(feeds: dict[str, ndarray]) -> dict[str, ndarray]")
      .def_property_readonly("input_names", &Session::input_names)
      .def_property_readonly("output_names", &Session::output_names);
  m.def("compare", &qfuse::python::Compare, qfuse::python::kCompareDoc, py::arg("model_a"), py::arg("model_b"),
        py::arg("data"), py::kw_only(), py::arg("labels") = py::none(), py::arg("samples") = 0);
}
