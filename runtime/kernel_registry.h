// Maps op types to kernel factories. Filled in one place: register_kernels.cc.
#ifndef QFUSE_RUNTIME_KERNEL_REGISTRY_H_
#define QFUSE_RUNTIME_KERNEL_REGISTRY_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "runtime/kernel.h"

namespace qfuse::runtime {

class KernelRegistry {
 public:
  // `op_type` of the default ONNX domain, or "domain.op_type" for qfuse's own ops.
  void Register(const std::string& op_type, KernelFactory factory) { factories_[op_type] = factory; }
  // nullptr when no kernel is registered for `op_type`.
  KernelFactory Find(const std::string& op_type) const {
    auto it = factories_.find(op_type);
    return it == factories_.end() ? nullptr : it->second;
  }
  KernelFactory Find(const ir::Node& node) const {
    return Find(node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type());
  }

 private:
  absl::flat_hash_map<std::string, KernelFactory> factories_;
};

// The registry with every kernel qfuse has (built once, on first use).
const KernelRegistry& DefaultKernelRegistry();

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_KERNEL_REGISTRY_H_
