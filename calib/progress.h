// Progress of a long loop on stderr: a bar redrawn in place (samples, samples/s, ETA)
// when stderr is a terminal, plain periodic lines when it is not (logs, CI).
#ifndef QFUSE_CALIB_PROGRESS_H_
#define QFUSE_CALIB_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace qfuse::calib {

class ProgressBar {
 public:
  // `out` defaults to stderr; `interactive` is detected with isatty unless forced.
  ProgressBar(std::string label, int64_t total, std::FILE* out = stderr);
  ProgressBar(std::string label, int64_t total, std::FILE* out, bool interactive);

  // Reports `done` of `total` items. Throttled: at most ~10 redraws per second on a
  // terminal; otherwise a line every 5 seconds.
  void Update(int64_t done);
  // Final line with the total time and rate.
  void Finish();
  // What the items are called in the lines ("samples" unless set).
  void set_unit(std::string unit) { unit_ = std::move(unit); }

 private:
  void Print(int64_t done, bool final_line);

  std::string label_;
  std::string unit_ = "samples";
  int64_t total_;
  std::FILE* out_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  int64_t done_ = 0;
  bool finished_ = false;
};

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_PROGRESS_H_
