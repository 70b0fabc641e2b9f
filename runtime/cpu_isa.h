// The instruction-set levels qfuse's kernels dispatch on, the CPU's own level, and a
// process-wide cap (QFUSE_MAX_ISA) so every path can be run and benchmarked on one machine.
#ifndef QFUSE_RUNTIME_CPU_ISA_H_
#define QFUSE_RUNTIME_CPU_ISA_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace qfuse::runtime {

// Ordered: each level includes the ones below it.
//   kScalar      portable C++ only
//   kAvx2        AVX2 + FMA
//   kAvx512      AVX-512 F/VL/BW/DQ
//   kAvx512Vnni  the above plus AVX512_VNNI (int8 dot products)
//   kAmx         accepted as a cap meaning "no cap"; qfuse has no AMX path of its own
enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Vnni = 3, kAmx = 4 };

// "scalar", "avx2", "avx512", "vnni", "amx".
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
// True when kernels may use `isa`.
inline bool IsaAllowed(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(MaxIsa()); }
// Sets the cap (tests, tools' --max_isa); kernels pick it up on their next call.
void SetIsaCap(Isa cap);

// Checks QFUSE_MAX_ISA: OK when unset or valid, else an error naming the bad value.
// Tools call it at start-up so a typo stops the run instead of being ignored.
absl::Status CheckIsaCapEnvironment();

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_CPU_ISA_H_
