#include "runtime/engine_tuner.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace qfuse::runtime {
namespace {

std::atomic<int64_t>& ChoiceCount() {
  static std::atomic<int64_t> count{0};
  return count;
}

bool TuningLog() {
  static const bool on = std::getenv("QFUSE_TUNING_LOG") != nullptr;
  return on;
}

}  // namespace

EngineTuner::EngineTuner(std::string label, std::vector<std::string> engines, int trials)
    : label_(std::move(label)), engines_(std::move(engines)), trials_(std::max(1, trials)) {}

EngineTuner::ShapeState& EngineTuner::StateOf(const std::vector<int64_t>& shape) {
  auto [it, added] = shapes_.try_emplace(shape);
  if (added) {
    it->second.calls.assign(engines_.size(), 0);
    it->second.best.assign(engines_.size(), std::numeric_limits<double>::infinity());
  }
  return it->second;
}

int EngineTuner::Next(const std::vector<int64_t>& shape) {
  if (engines_.size() <= 1) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  ShapeState& s = StateOf(shape);
  if (s.chosen >= 0) return s.chosen;
  // Round robin: the engine with the fewest calls so far, the lowest index first.
  return static_cast<int>(std::min_element(s.calls.begin(), s.calls.end()) - s.calls.begin());
}

void EngineTuner::Record(const std::vector<int64_t>& shape, int engine, double seconds) {
  if (engines_.size() <= 1 || engine < 0 || engine >= static_cast<int>(engines_.size())) return;
  std::lock_guard<std::mutex> lock(mu_);
  ShapeState& s = StateOf(shape);
  if (s.chosen >= 0) return;
  // The first call of each engine is its warm-up and is not timed.
  if (s.calls[engine]++ > 0) s.best[engine] = std::min(s.best[engine], seconds);
  if (*std::min_element(s.calls.begin(), s.calls.end()) > trials_) Choose(shape, s);
}

void EngineTuner::Choose(const std::vector<int64_t>& shape, ShapeState& s) {
  s.chosen = static_cast<int>(std::min_element(s.best.begin(), s.best.end()) - s.best.begin());
  ChoiceCount().fetch_add(1);
  if (!TuningLog()) return;
  std::vector<std::string> times;
  for (size_t e = 0; e < engines_.size(); ++e) {
    times.push_back(absl::StrCat(engines_[e], " ", s.best[e] * 1e3, " ms"));
  }
  std::fprintf(stderr, "tuning %s [%s]: %s -> %s\n", label_.c_str(), absl::StrJoin(shape, ",").c_str(),
               absl::StrJoin(times, ", ").c_str(), engines_[s.chosen].c_str());
}

int EngineTuner::Chosen(const std::vector<int64_t>& shape) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = shapes_.find(shape);
  return it == shapes_.end() ? -1 : it->second.chosen;
}

int64_t EngineTuner::ChoicesMade() { return ChoiceCount().load(); }

bool EngineTuner::AnyChose(int engine) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [shape, state] : shapes_) {
    if (state.chosen == engine) return true;
  }
  return false;
}

}  // namespace qfuse::runtime
