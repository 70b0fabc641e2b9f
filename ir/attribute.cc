#include "ir/attribute.h"

#include "absl/strings/str_cat.h"

namespace qfuse::ir {

bool AttributeValuesEqual(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  if (const Tensor* ta = std::get_if<Tensor>(&a)) return ta->BitwiseEqual(std::get<Tensor>(b));
  if (const float* fa = std::get_if<float>(&a)) {
    // Bitwise, so NaN == NaN and -0 != +0, as a round trip must preserve.
    float fb = std::get<float>(b);
    return std::memcmp(fa, &fb, sizeof(float)) == 0;
  }
  if (const auto* va = std::get_if<std::vector<float>>(&a)) {
    const auto& vb = std::get<std::vector<float>>(b);
    return va->size() == vb.size() &&
           (va->empty() || std::memcmp(va->data(), vb.data(), va->size() * sizeof(float)) == 0);
  }
  if (const auto* ia = std::get_if<int64_t>(&a)) return *ia == std::get<int64_t>(b);
  if (const auto* sa = std::get_if<std::string>(&a)) return *sa == std::get<std::string>(b);
  if (const auto* isa = std::get_if<std::vector<int64_t>>(&a)) return *isa == std::get<std::vector<int64_t>>(b);
  return std::get<std::vector<std::string>>(a) == std::get<std::vector<std::string>>(b);
}

template <typename T>
absl::StatusOr<T> AttributeMap::Get(const std::string& name, const T& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' has an unexpected type"));
}

absl::StatusOr<int64_t> AttributeMap::GetInt(const std::string& name, int64_t fallback) const {
  return Get<int64_t>(name, fallback);
}
absl::StatusOr<float> AttributeMap::GetFloat(const std::string& name, float fallback) const {
  return Get<float>(name, fallback);
}
absl::StatusOr<std::string> AttributeMap::GetString(const std::string& name,
                                                    const std::string& fallback) const {
  return Get<std::string>(name, fallback);
}
absl::StatusOr<std::vector<int64_t>> AttributeMap::GetInts(
    const std::string& name, const std::vector<int64_t>& fallback) const {
  return Get<std::vector<int64_t>>(name, fallback);
}
absl::StatusOr<std::vector<float>> AttributeMap::GetFloats(
    const std::string& name, const std::vector<float>& fallback) const {
  return Get<std::vector<float>>(name, fallback);
}

absl::StatusOr<const Tensor*> AttributeMap::GetTensor(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return absl::NotFoundError(absl::StrCat("no attribute '", name, "'"));
  if (const Tensor* t = std::get_if<Tensor>(&it->second)) return t;
  return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' is not a tensor"));
}

bool AttributeMap::operator==(const AttributeMap& other) const {
  if (values_.size() != other.values_.size()) return false;
  for (auto a = values_.begin(), b = other.values_.begin(); a != values_.end(); ++a, ++b) {
    if (a->first != b->first || !AttributeValuesEqual(a->second, b->second)) return false;
  }
  return true;
}

}  // namespace qfuse::ir
