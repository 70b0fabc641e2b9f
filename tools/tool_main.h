// The shared main() of qfuse's command-line tools: parse absl flags (--help lists the tool's own
// and the shared data flags), remove unfinished output files if interrupted, check QFUSE_MAX_ISA,
// run the tool, and on failure print one line "error: <message>" to stderr and exit 1.
#ifndef QFUSE_TOOLS_TOOL_MAIN_H_
#define QFUSE_TOOLS_TOOL_MAIN_H_

#include <cstdio>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/file_util.h"
#include "runtime/cpu_isa.h"

namespace qfuse::tools {

// Whether --help lists the flags defined in `file`: those of the tool's main file (<tool>.cc,
// <tool>_main.cc: absl's default) and the shared data flags of tools/data_flags.cc.
inline bool IsHelpFlagFile(absl::string_view program, absl::string_view file) {
  if (absl::EndsWith(file, "tools/data_flags.cc")) return true;
  const absl::string_view base = file.substr(file.rfind('/') + 1);
  return base == absl::StrCat(program, ".cc") || base == absl::StrCat(program, "_main.cc");
}

inline int RunTool(int argc, char** argv, const char* usage, absl::Status (*tool)()) {
  absl::SetProgramUsageMessage(usage);
  const absl::string_view invocation = argc > 0 ? argv[0] : "";
  const std::string program(invocation.substr(invocation.rfind('/') + 1));
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [program](absl::string_view file) { return IsHelpFlagFile(program, file); };
  absl::SetFlagsUsageConfig(config);
  absl::ParseCommandLine(argc, argv);
  base::InstallInterruptCleanup();  // an interrupted run leaves no partial output file
  absl::Status status = runtime::CheckIsaCapEnvironment();  // a typo in QFUSE_MAX_ISA stops the run
  if (status.ok()) status = tool();
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace qfuse::tools

#endif  // QFUSE_TOOLS_TOOL_MAIN_H_
