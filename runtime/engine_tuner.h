// Picks, per input shape, the fastest of a kernel's interchangeable engines (engines that write
// the same bytes, so that the choice changes only the speed) by timing them on the kernel's
// first calls at that shape, as TensorRT's tactic selection does at build time: one warm-up
// call per engine (primitive creation, weight packing, page faults), then `trials` timed calls
// per engine, interleaved; the engine with the least minimum time is kept for that shape.
// QFUSE_TUNING_LOG=1 prints each choice with its times (stderr).
#ifndef QFUSE_RUNTIME_ENGINE_TUNER_H_
#define QFUSE_RUNTIME_ENGINE_TUNER_H_

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace qfuse::runtime {

class EngineTuner {
 public:
  static constexpr int kDefaultTrials = 2;
  // Calls at one shape until the choice is made, with `engines` engines.
  static constexpr int CallsToChoose(int engines, int trials = kDefaultTrials) { return engines * (1 + trials); }

  // `label` names the kernel (the node) in the log; `engines` names each engine.
  EngineTuner(std::string label, std::vector<std::string> engines, int trials = kDefaultTrials);

  // The engine the next call at `shape` should run.
  int Next(const std::vector<int64_t>& shape);
  // Records that a call at `shape` ran `engine` in `seconds` (a call that failed: pass
  // infinity, so that the other engines win). Once every engine has its warm-up and `trials`
  // timed calls, the shape's engine is chosen.
  void Record(const std::vector<int64_t>& shape, int engine, double seconds);
  // Runs `call` (returning absl::Status) as `engine` at `shape` and records its wall time,
  // infinity when it fails; returns its status.
  template <typename Call>
  absl::Status Timed(const std::vector<int64_t>& shape, int engine, Call call) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status status = call();
    Record(shape, engine,
           status.ok() ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                       : std::numeric_limits<double>::infinity());
    return status;
  }
  // The engine chosen for `shape`, or -1 while it is still being measured.
  int Chosen(const std::vector<int64_t>& shape) const;
  // Whether some shape chose `engine`.
  bool AnyChose(int engine) const;
  // Choices made by every tuner of the process so far (tests check that tuning happened).
  static int64_t ChoicesMade();

 private:
  struct ShapeState {
    std::vector<int> calls;    // per engine, warm-up included
    std::vector<double> best;  // per engine, the least timed seconds
    int next = 0;              // round robin while measuring
    int chosen = -1;
  };
  ShapeState& StateOf(const std::vector<int64_t>& shape);
  void Choose(const std::vector<int64_t>& shape, ShapeState& s);

  const std::string label_;
  const std::vector<std::string> engines_;
  const int trials_;
  mutable std::mutex mu_;
  std::map<std::vector<int64_t>, ShapeState> shapes_;
};

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_ENGINE_TUNER_H_
