// Typed node attributes, parsed once from ONNX at import: passes and kernels read
// ints, floats and tensors, never strings to re-parse.
#ifndef QFUSE_IR_ATTRIBUTE_H_
#define QFUSE_IR_ATTRIBUTE_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace qfuse::ir {

using AttributeValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                                    std::vector<float>, std::vector<std::string>, Tensor>;

bool AttributeValuesEqual(const AttributeValue& a, const AttributeValue& b);

// Name -> value, ordered by name so iteration (and export) is deterministic.
class AttributeMap {
 public:
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  void Set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  void Erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttributeValue>& all() const { return values_; }
  bool empty() const { return values_.empty(); }

  // Value of `name`, or `fallback` when absent. An attribute of another type is an
  // error (the ONNX checker guarantees types, so this flags a qfuse bug or bad model).
  absl::StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback) const;
  absl::StatusOr<float> GetFloat(const std::string& name, float fallback) const;
  absl::StatusOr<std::string> GetString(const std::string& name, const std::string& fallback) const;
  absl::StatusOr<std::vector<int64_t>> GetInts(const std::string& name,
                                               const std::vector<int64_t>& fallback) const;
  absl::StatusOr<std::vector<float>> GetFloats(const std::string& name,
                                               const std::vector<float>& fallback) const;
  // The tensor attribute `name`; absent is NotFound.
  absl::StatusOr<const Tensor*> GetTensor(const std::string& name) const;

  bool operator==(const AttributeMap& other) const;

 private:
  template <typename T>
  absl::StatusOr<T> Get(const std::string& name, const T& fallback) const;

  std::map<std::string, AttributeValue> values_;
};

}  // namespace qfuse::ir

#endif  // QFUSE_IR_ATTRIBUTE_H_
