// Restores the process's ISA cap (runtime/cpu_isa.h) when a test that changes it ends.
#ifndef QFUSE_TESTS_TESTING_ISA_CAP_GUARD_H_
#define QFUSE_TESTS_TESTING_ISA_CAP_GUARD_H_

#include "runtime/cpu_isa.h"

namespace qfuse::testing {

class IsaCapGuard {
 public:
  IsaCapGuard() : saved_(runtime::MaxIsa()) {}
  ~IsaCapGuard() { runtime::SetIsaCap(saved_ == runtime::DetectedIsa() ? runtime::Isa::kAmx : saved_); }
  IsaCapGuard(const IsaCapGuard&) = delete;
  IsaCapGuard& operator=(const IsaCapGuard&) = delete;

 private:
  runtime::Isa saved_;
};

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_ISA_CAP_GUARD_H_
