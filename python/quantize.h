// qfuse.quantize in the Python module: its arguments as a pipeline::QuantizeConfig (calibration
// data from paths or from an iterable of dicts of arrays), the run, and its result as a dict.
#ifndef QFUSE_PYTHON_QUANTIZE_H_
#define QFUSE_PYTHON_QUANTIZE_H_

#include <pybind11/pybind11.h>

namespace qfuse::python {

// Adds quantize() to the module.
void DefineQuantize(pybind11::module_& module);

}  // namespace qfuse::python

#endif  // QFUSE_PYTHON_QUANTIZE_H_
