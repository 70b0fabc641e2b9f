// Whole-file reads and atomic writes (temporary file in the same folder, then rename),
// so an interrupted or failed write never leaves a partial output file.
#ifndef QFUSE_BASE_FILE_UTIL_H_
#define QFUSE_BASE_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace qfuse::base {

absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `contents` to `path` via `path.tmp-<pid>` and rename(2).
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

// True when both paths name the same existing file (or the same string when missing).
bool SameFile(const std::string& a, const std::string& b);

// Marks `path` as an unfinished temporary file for its lifetime: if the process is
// interrupted meanwhile (after InstallInterruptCleanup), the file is removed.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::string& path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  int slot_;
};

// On SIGINT, SIGTERM or SIGHUP: removes every guarded temporary file, then dies of the
// same signal. So an interrupted run leaves no partial output file behind.
void InstallInterruptCleanup();

}  // namespace qfuse::base

#endif  // QFUSE_BASE_FILE_UTIL_H_
