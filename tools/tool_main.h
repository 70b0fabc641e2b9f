// The shared main() of qfuse's command-line tools: parse absl flags, remove unfinished
// output files if interrupted, check QFUSE_MAX_ISA, run the tool, and on failure print one line
// "error: <message>" to stderr and exit 1.
#ifndef QFUSE_TOOLS_TOOL_MAIN_H_
#define QFUSE_TOOLS_TOOL_MAIN_H_

#include <cstdio>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "ir/file_util.h"
#include "runtime/cpu_isa.h"

namespace qfuse::tools {

inline int RunTool(int argc, char** argv, const char* usage, absl::Status (*tool)()) {
  absl::SetProgramUsageMessage(usage);
  absl::ParseCommandLine(argc, argv);
  ir::InstallInterruptCleanup();  // an interrupted run leaves no partial output file
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
