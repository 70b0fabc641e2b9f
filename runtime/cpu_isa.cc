#include "runtime/cpu_isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace qfuse::runtime {
namespace {

constexpr const char* kEnvironmentVariable = "QFUSE_MAX_ISA";

Isa Detect() {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  if (vnni) return Isa::kAvx512Vnni;
  if (avx512) return Isa::kAvx512;
  if (avx2 && __builtin_cpu_supports("avxvnni")) return Isa::kAvx2Vnni;
  if (avx2) return Isa::kAvx2;
  return Isa::kScalar;
}

// The cap from the environment; an invalid value is no cap here (tools reject it first
// through CheckIsaCapEnvironment).
Isa CapFromEnvironment() {
  const char* value = std::getenv(kEnvironmentVariable);
  if (value == nullptr || *value == '\0') return Isa::kAmx;
  absl::StatusOr<Isa> isa = ParseIsa(value);
  return isa.ok() ? *isa : Isa::kAmx;
}

std::atomic<int>& Cap() {
  static std::atomic<int> cap{static_cast<int>(CapFromEnvironment())};
  return cap;
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx2Vnni: return "avx2_vnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Vnni: return "vnni";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

absl::StatusOr<Isa> ParseIsa(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAmx}) {
    if (lower == IsaName(isa)) return isa;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown instruction set '", name, "' (expected scalar, avx2, avx2_vnni, avx512, vnni or amx)"));
}

Isa DetectedIsa() {
  static const Isa detected = Detect();
  return detected;
}

bool CpuHasAvxVnni() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
  }();
  return has;
}

bool VnniAllowed() {
  const Isa isa = MaxIsa();
  return isa == Isa::kAvx2Vnni || isa >= Isa::kAvx512Vnni;
}

Isa MaxIsa() {
  return static_cast<Isa>(std::min(static_cast<int>(DetectedIsa()), Cap().load(std::memory_order_relaxed)));
}

Isa IsaCap() { return static_cast<Isa>(Cap().load(std::memory_order_relaxed)); }

void SetIsaCap(Isa cap) { Cap().store(static_cast<int>(cap), std::memory_order_relaxed); }

absl::Status CheckIsaCapEnvironment() {
  const char* value = std::getenv(kEnvironmentVariable);
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  absl::StatusOr<Isa> isa = ParseIsa(value);
  if (!isa.ok()) return absl::InvalidArgumentError(absl::StrCat(kEnvironmentVariable, ": ", isa.status().message()));
  return absl::OkStatus();
}

}  // namespace qfuse::runtime
