#include "base/output_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"

namespace qfuse::base {
namespace fs = std::filesystem;
namespace {

constexpr char kLockName[] = ".qfuse.lock";

// The pid in a WriteFileAtomically temporary name ("model.onnx.tmp-1234"), or 0.
pid_t TempFilePid(const std::string& name) {
  const size_t at = name.rfind(".tmp-");
  if (at == std::string::npos) return 0;
  int pid = 0;
  if (!absl::SimpleAtoi(name.substr(at + 5), &pid) || pid <= 0) return 0;
  return pid;
}

bool ProcessAlive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Removes `*.tmp-<pid>` files of processes that no longer run.
int RemoveStaleTempFiles(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const pid_t pid = TempFilePid(entry.path().filename().string());
    if (pid == 0 || pid == ::getpid() || ProcessAlive(pid)) continue;
    std::error_code remove_ec;
    if (fs::remove(entry.path(), remove_ec)) ++removed;
  }
  return removed;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputDirLock>> OutputDirLock::Acquire(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, ": output folder is a file"));
  }
  const bool created = fs::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(dir, ": cannot create (", ec.message(), ")"));
  const std::string lock_path = (fs::path(dir) / kLockName).string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(dir, ": cannot write (", std::strerror(errno), ")"));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {0};
    const ssize_t n = ::pread(fd, holder, sizeof(holder) - 1, 0);
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        dir, ": another qfuse run is writing into this folder",
        n > 0 ? absl::StrCat(" (pid ", std::string(holder, static_cast<size_t>(n)), ")") : std::string(),
        "; wait for it or choose another --output"));
  }
  const std::string pid = absl::StrCat(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The pid is only a courtesy for the error above; the lock itself holds.
  }
  const int stale = RemoveStaleTempFiles(dir);
  return std::unique_ptr<OutputDirLock>(new OutputDirLock(dir, fd, created, stale));
}

OutputDirLock::~OutputDirLock() {
  if (created_) {
    std::error_code ec;
    bool only_lock = true;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
      if (entry.path().filename() != kLockName) only_lock = false;
    }
    if (!ec && only_lock) {
      fs::remove(fs::path(dir_) / kLockName, ec);
      fs::remove(dir_, ec);
    }
  }
  ::close(fd_);  // releases the flock
}

absl::Status CheckWritable(const std::string& path) {
  const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create its folder (", ec.message(), ")"));
  const std::string probe = absl::StrCat(path, ".tmp-", ::getpid());
  TempFileGuard guard(probe);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write (", std::strerror(errno), ")"));
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace qfuse::base
