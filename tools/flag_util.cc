#include "tools/flag_util.h"

#include "absl/flags/internal/private_handle_accessor.h"
#include "absl/strings/str_cat.h"

namespace qfuse::tools {

// Debian's Abseil (20220623) keeps CommandLineFlag::IsSpecifiedOnCommandLine private; its
// accessor is the way in.
bool IsFlagSet(const absl::CommandLineFlag& flag) {
  return absl::flags_internal::PrivateHandleAccessor::IsSpecifiedOnCommandLine(flag);
}

absl::Status AliasConflict(const absl::CommandLineFlag& flag, const absl::CommandLineFlag& alias) {
  return absl::InvalidArgumentError(absl::StrCat("--", alias.Name(), " is an alias of --", flag.Name(), ": give one"));
}

}  // namespace qfuse::tools
