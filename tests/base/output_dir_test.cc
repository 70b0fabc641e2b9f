// The output-folder lock: a second run into the same folder fails at once with a message
// naming the folder and the holder; temporary files of dead processes are cleaned up; a
// folder the run created but never wrote into is removed; unwritable paths fail early.
#include "base/output_dir.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::base {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  return dir;
}

void Touch(const std::string& path) { std::ofstream(path) << "x"; }

// The pid of a process that has exited (and been reaped).
pid_t DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

TEST(OutputDirLockTest, SecondRunIntoTheSameFolderFailsAtOnce) {
  const std::string dir = FreshDir("locked");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputDirLock> first, OutputDirLock::Acquire(dir));
  absl::StatusOr<std::unique_ptr<OutputDirLock>> second = OutputDirLock::Acquire(dir);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(),
            dir + ": another qfuse run is writing into this folder (pid " + std::to_string(getpid()) +
                "); wait for it or choose another --output");
  Touch(dir + "/model.onnx");
  first.reset();
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputDirLock> again, OutputDirLock::Acquire(dir));
  EXPECT_TRUE(fs::exists(dir + "/model.onnx"));
}

TEST(OutputDirLockTest, RemovesTemporaryFilesOfDeadProcessesOnly) {
  const std::string dir = FreshDir("stale");
  fs::create_directories(dir);
  const std::string dead = dir + "/model_int8_full.onnx.tmp-" + std::to_string(DeadPid());
  const std::string alive = dir + "/report.json.tmp-" + std::to_string(getppid());
  Touch(dead);
  Touch(alive);
  Touch(dir + "/notes.tmp-abc");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputDirLock> lock, OutputDirLock::Acquire(dir));
  EXPECT_EQ(lock->stale_temp_files_removed(), 1);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(dir + "/notes.tmp-abc"));
}

TEST(OutputDirLockTest, FolderCreatedButNotWrittenIsRemoved) {
  const std::string dir = FreshDir("unused");
  { QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputDirLock> lock, OutputDirLock::Acquire(dir)); }
  EXPECT_FALSE(fs::exists(dir));
  const std::string kept = FreshDir("kept");
  fs::create_directories(kept);
  { QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputDirLock> lock, OutputDirLock::Acquire(kept)); }
  EXPECT_TRUE(fs::exists(kept));  // it existed before: never removed
}

TEST(OutputDirLockTest, FilesInsteadOfFoldersAndUnwritablePaths) {
  const std::string file = ::testing::TempDir() + "/plain_file";
  Touch(file);
  absl::StatusOr<std::unique_ptr<OutputDirLock>> on_file = OutputDirLock::Acquire(file);
  ASSERT_FALSE(on_file.ok());
  EXPECT_EQ(on_file.status().message(), file + ": output folder is a file");
  QFUSE_EXPECT_OK(CheckWritable(::testing::TempDir() + "/reports/sub/report.json"));
  absl::Status under_file = CheckWritable(file + "/report.json");
  EXPECT_FALSE(under_file.ok());
  EXPECT_NE(under_file.message().find(file + "/report.json: cannot create its folder"), std::string::npos)
      << under_file;
}

}  // namespace
}  // namespace qfuse::base
