// Claims an output folder for one run: creates it, takes an exclusive lock on it so a
// second run into the same folder fails at once instead of racing the first, and removes
// the temporary files (`*.tmp-<pid>`) that killed runs left behind.
#ifndef QFUSE_BASE_OUTPUT_DIR_H_
#define QFUSE_BASE_OUTPUT_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace qfuse::base {

class OutputDirLock {
 public:
  // Creates `dir` if needed and locks `<dir>/.qfuse.lock` (flock, released by the kernel
  // even when the process is killed). FailedPrecondition naming the folder and the
  // holder's pid when another run holds it.
  static absl::StatusOr<std::unique_ptr<OutputDirLock>> Acquire(const std::string& dir);

  // Releases the lock. If Acquire created the folder and the run wrote nothing into it,
  // the folder is removed again, so a failed run leaves nothing behind.
  ~OutputDirLock();
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

  // Temporary files of dead processes removed by Acquire.
  int stale_temp_files_removed() const { return stale_removed_; }

 private:
  OutputDirLock(std::string dir, int fd, bool created, int stale_removed)
      : dir_(std::move(dir)), fd_(fd), created_(created), stale_removed_(stale_removed) {}
  std::string dir_;
  int fd_;
  bool created_;
  int stale_removed_;
};

// OK when a file can be created next to `path` now (its folder is created if missing):
// checked before long work so that an unwritable report path fails at the start.
absl::Status CheckWritable(const std::string& path);

}  // namespace qfuse::base

#endif  // QFUSE_BASE_OUTPUT_DIR_H_
