// The instruction-set levels qfuse's kernels dispatch on, the CPU's own level, and a
// process-wide cap (QFUSE_MAX_ISA) so every path can be run and benchmarked on one machine.
#ifndef QFUSE_RUNTIME_CPU_ISA_H_
#define QFUSE_RUNTIME_CPU_ISA_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace qfuse::runtime {

// Ordered: each level includes the ones below it, but for kAvx2Vnni (see there).
//   kScalar      portable C++ only
//   kAvx2        AVX2 + FMA
//   kAvx2Vnni    AVX2 + FMA + AVX-VNNI (the VEX-encoded 256-bit int8 dot products of Intel's
//                Alder Lake and later cores and AMD's Zen 5, often without AVX-512). oneDNN's
//                avx2_vnni int8 kernels and qfuse's int8 GEMM (kernels/quant/int8_gemm.h) use
//                them; qfuse's other kernels run their AVX2 code. AVX-VNNI is not implied by
//                the levels above: the kAvx512 cap stands for AVX-512 CPUs without any VNNI
//                (Skylake-SP), and a kAvx512Vnni CPU need not have AVX-VNNI (VnniAllowed,
//                CpuHasAvxVnni).
//   kAvx512      AVX-512 F/VL/BW/DQ
//   kAvx512Vnni  the above plus AVX512_VNNI (int8 dot products)
//   kAmx         accepted as a cap meaning "no cap"; qfuse has no AMX path of its own
enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx2Vnni = 2, kAvx512 = 3, kAvx512Vnni = 4, kAmx = 5 };

// "scalar", "avx2", "avx2_vnni", "avx512", "vnni", "amx".
const char* IsaName(Isa isa);
// Parses the names above (case-insensitive); anything else is an InvalidArgumentError.
absl::StatusOr<Isa> ParseIsa(absl::string_view name);

// The highest level this CPU supports (detected once).
Isa DetectedIsa();
// The level kernels may use: min(DetectedIsa(), cap). The cap starts as QFUSE_MAX_ISA
// (read at first use; unset means no cap) and may be lowered or raised by SetIsaCap.
Isa MaxIsa();
// The cap alone (kAmx when none is set), for libraries whose own levels go past qfuse's
// detection (oneDNN's AMX kernels).
Isa IsaCap();
// Whether the CPU has AVX-VNNI (VEX-encoded vpdpbusd), which no level implies.
bool CpuHasAvxVnni();
// Whether int8 dot-product instructions (AVX-512 VNNI or AVX-VNNI) may be used under the cap:
// at kAvx2Vnni and from kAvx512Vnni up, not at kAvx512 (whatever the CPU has). Kernels that
// use AVX-VNNI check this and CpuHasAvxVnni.
bool VnniAllowed();
// True when kernels may use `isa`.
inline bool IsaAllowed(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(MaxIsa()); }
// Sets the cap (tests, tools' --max_isa); kernels pick it up on their next call.
void SetIsaCap(Isa cap);

// Checks QFUSE_MAX_ISA: OK when unset or valid, else an error naming the bad value.
// Tools call it at start-up so a typo stops the run instead of being ignored.
absl::Status CheckIsaCapEnvironment();

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_CPU_ISA_H_
