// The mean of contiguous rows of n floats as onnxruntime 1.30's float32 GlobalAveragePool
// computes it on x86 with AVX2 or AVX-512, in one of the two summation orders its CPU provider
// runs:
//   kFourLanes   (MlasPool's global kernel: what runs at optimisation level 'disabled', and at
//                 'all' wherever kSequential's rewrite does not apply): x_i into lane i mod 4 for
//                 i < 4 * floor(n / 4), in order; s = (a0 + a2) + (a1 + a3); then the last
//                 n mod 4 values added to s one by one, in order;
//   kSequential  (the NCHWc GlobalAveragePool its graph optimiser substitutes at level 'all'
//                 when the input is 4-D FLOAT with a known channel count that is a multiple of
//                 the NCHWc block, 8 with AVX2 and 16 with AVX-512F, and has no producing node
//                 left: a graph input, or the output of nodes it rewrote to NCHWc before, such
//                 as a float Conv; after a DequantizeLinear or any other op it keeps
//                 kFourLanes): s = ((x_0 + x_1) + x_2) + ... in order;
//   both from s = +0 in float32, then y = s / float(n) (a division, rounded to nearest even).
// GlobalAverageOrderFor picks the order from the input's declared type as that optimiser
// does (checked on an AVX2 machine with block 8 and on an AVX-512 one with block 16, where a
// graph input of 1000 channels keeps kFourLanes); of the NCHWc producers it knows graph inputs
// only (a float Conv -> GlobalAveragePool keeps kFourLanes here: qfuse runs that pair on oneDNN
// where it can). The pool kernel fixes the order when it is made, at the ISA cap of that time.
// The AVX2 path and the portable one give the same bits (global_average_row_test); that they
// are onnxruntime's is the test's rows and models/zoo/float_ops_probe.py's check.
#ifndef QFUSE_RUNTIME_KERNELS_NN_GLOBAL_AVERAGE_ROW_H_
#define QFUSE_RUNTIME_KERNELS_NN_GLOBAL_AVERAGE_ROW_H_

#include <cstdint>

namespace qfuse::runtime::kernels {

enum class GlobalAverageOrder { kFourLanes, kSequential };

// What onnxruntime's NCHWc rewrite looks at in a GlobalAveragePool's input.
struct GlobalAverageInput {
  int64_t rank = -1;         // -1 when unknown
  int64_t channels = -1;     // -1 when unknown or symbolic
  bool graph_input = false;  // the input is one of the graph's inputs
};

// onnxruntime's NCHWc block on a machine at qfuse's ISA level (runtime/cpu_isa.h): 16 where
// AVX-512 is allowed, else 8 (so QFUSE_MAX_ISA=avx2 gives what an AVX2 machine's onnxruntime
// runs). qfuse's AVX-512 level needs F, VL, BW and DQ; onnxruntime's block is 16 with F alone,
// so a CPU with AVX-512F but not the rest (Knights Landing) would get 8 here.
int64_t OnnxruntimeNchwcBlock();

// onnxruntime's order for that input, with NCHWc block `nchwc_block`.
GlobalAverageOrder GlobalAverageOrderFor(const GlobalAverageInput& input, int64_t nchwc_block);

// y[r] = the mean of x[r * n, (r + 1) * n) for r < rows, n > 0; `vector`: the AVX2 path where
// the CPU has it.
void GlobalAverageRows(const float* x, int64_t rows, int64_t n, GlobalAverageOrder order, float* y, bool vector = true);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_NN_GLOBAL_AVERAGE_ROW_H_
