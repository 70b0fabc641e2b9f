// Resolves user-given relative paths against the directory `bazel run` was started
// from (BUILD_WORKING_DIRECTORY), so `--model=models/x.onnx` works as typed.
#ifndef QFUSE_TOOLS_WORKSPACE_PATH_H_
#define QFUSE_TOOLS_WORKSPACE_PATH_H_

#include <cstdlib>
#include <string>

namespace qfuse::tools {

inline std::string ResolveUserPath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd == nullptr || *cwd == '\0') return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace qfuse::tools

#endif  // QFUSE_TOOLS_WORKSPACE_PATH_H_
