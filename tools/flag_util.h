// Flag helpers shared by the tools: whether the user gave a flag, and an old flag name kept
// working as an alias of its new one.
#ifndef QFUSE_TOOLS_FLAG_UTIL_H_
#define QFUSE_TOOLS_FLAG_UTIL_H_

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace qfuse::tools {

// Whether --name was on the command line (its default applies otherwise).
bool IsFlagSet(const absl::CommandLineFlag& flag);
template <typename T>
bool IsFlagSet(const absl::Flag<T>& flag) {
  return IsFlagSet(absl::GetFlagReflectionHandle(flag));
}

// InvalidArgument "--<alias> is an alias of --<flag>: give one".
absl::Status AliasConflict(const absl::CommandLineFlag& flag, const absl::CommandLineFlag& alias);

// The value of `flag`, or of `alias` when only the alias was given; both given is an error.
template <typename T>
absl::StatusOr<T> GetFlagOrAlias(const absl::Flag<T>& flag, const absl::Flag<T>& alias) {
  if (!IsFlagSet(alias)) return absl::GetFlag(flag);
  if (IsFlagSet(flag)) return AliasConflict(absl::GetFlagReflectionHandle(flag), absl::GetFlagReflectionHandle(alias));
  return absl::GetFlag(alias);
}

}  // namespace qfuse::tools

#endif  // QFUSE_TOOLS_FLAG_UTIL_H_
