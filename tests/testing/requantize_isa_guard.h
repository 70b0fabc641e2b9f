// Restores the output stage's requantization ISA level (runtime/int8/output_stage.h's
// SetRequantizeIsa) when a test that changes it ends.
#ifndef QFUSE_TESTS_TESTING_REQUANTIZE_ISA_GUARD_H_
#define QFUSE_TESTS_TESTING_REQUANTIZE_ISA_GUARD_H_

#include "runtime/int8/output_stage.h"

namespace qfuse::testing {

class RequantizeIsaGuard {
 public:
  RequantizeIsaGuard() : saved_(runtime::int8::CurrentRequantizeIsa()) {}
  ~RequantizeIsaGuard() { runtime::int8::SetRequantizeIsa(saved_); }
  RequantizeIsaGuard(const RequantizeIsaGuard&) = delete;
  RequantizeIsaGuard& operator=(const RequantizeIsaGuard&) = delete;

 private:
  runtime::int8::RequantizeIsa saved_;
};

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_REQUANTIZE_ISA_GUARD_H_
