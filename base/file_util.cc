#include "base/file_util.h"

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace qfuse::base {
namespace {

// Guarded temporary paths, readable from a signal handler: fixed storage, a slot is
// published by setting its flag after the path is written.
constexpr int kMaxPendingTempFiles = 16;
char pending_paths[kMaxPendingTempFiles][PATH_MAX];
std::atomic<bool> pending_used[kMaxPendingTempFiles];
std::mutex pending_mu;

void RemovePendingAndDie(int signal_number) {
  for (int i = 0; i < kMaxPendingTempFiles; ++i) {
    if (pending_used[i].load()) unlink(pending_paths[i]);  // async-signal-safe
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

TempFileGuard::TempFileGuard(const std::string& path) : slot_(-1) {
  if (path.size() >= PATH_MAX) return;
  std::lock_guard<std::mutex> lock(pending_mu);
  for (int i = 0; i < kMaxPendingTempFiles; ++i) {
    if (!pending_used[i].load()) {
      std::memcpy(pending_paths[i], path.c_str(), path.size() + 1);
      pending_used[i].store(true);
      slot_ = i;
      return;
    }
  }
}

TempFileGuard::~TempFileGuard() {
  if (slot_ >= 0) pending_used[slot_].store(false);
}

void InstallInterruptCleanup() {
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal_number, RemovePendingAndDie);
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return buffer.str();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string tmp = absl::StrCat(path, ".tmp-", getpid());
  TempFileGuard guard(tmp);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write (", std::strerror(errno), ")"));
  }
  const bool written = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  const bool flushed = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed) {
    std::remove(tmp.c_str());
    return absl::DataLossError(absl::StrCat(path, ": write failed (", std::strerror(errno), ")"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(absl::StrCat(path, ": rename failed (", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return a == b;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace qfuse::base
