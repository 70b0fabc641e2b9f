// Atomic writes and cleanup of unfinished temporary files on interruption.
#include "base/file_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::base {
namespace {

namespace fs = std::filesystem;

std::string Tmp(const std::string& name) { return (fs::path(std::getenv("TEST_TMPDIR")) / name).string(); }

TEST(FileUtilTest, AtomicWriteReplacesAndLeavesNoTemporary) {
  const std::string path = Tmp("atomic.txt");
  QFUSE_ASSERT_OK(WriteFileAtomically(path, "first"));
  QFUSE_ASSERT_OK(WriteFileAtomically(path, "second"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string text, ReadFileToString(path));
  EXPECT_EQ(text, "second");
  for (const auto& e : fs::directory_iterator(Tmp(""))) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  EXPECT_FALSE(WriteFileAtomically(Tmp("no_such_dir/x.txt"), "x").ok());
  EXPECT_TRUE(SameFile(path, Tmp("./atomic.txt")));
  EXPECT_FALSE(SameFile(path, Tmp("other.txt")));
}

TEST(FileUtilTest, InterruptRemovesGuardedTemporaryFiles) {
  for (int signal_number : {SIGINT, SIGTERM}) {
    const std::string partial = Tmp("partial.onnx.tmp-" + std::to_string(signal_number));
    std::ofstream(partial) << "half a model";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      InstallInterruptCleanup();
      TempFileGuard guard(partial);
      raise(signal_number);
      _exit(0);  // not reached: the handler re-raises with the default action
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), signal_number);
    EXPECT_FALSE(fs::exists(partial)) << partial;
  }
  // Without a guard the file stays (the handler removes only what is guarded).
  const std::string kept = Tmp("kept.txt");
  std::ofstream(kept) << "done";
  const pid_t child = fork();
  if (child == 0) {
    InstallInterruptCleanup();
    raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(fs::exists(kept));
}

}  // namespace
}  // namespace qfuse::base
