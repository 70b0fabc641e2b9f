// Einsum, FLOAT and DOUBLE: implicit and explicit outputs, "..." broadcasting,
// repeated labels (diagonals, traces) and any number of operands. Each operand is
// first reduced to distinct labels (diagonal view, early summation), then operands
// are contracted left to right as batched GEMMs after transposing to
// [batch, free, contracted] order.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/einsum_equation.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/eigen_gemm.h"
#include "runtime/kernels/linalg/linalg.h"

namespace qfuse::runtime::kernels {
namespace {

// A label is a letter's character code; ellipsis dims get codes from kEllipsisBase on.
constexpr int kEllipsisBase = 256;
using ir::kEinsumEllipsis;

// A dense operand with one distinct label per dim.
template <typename T>
struct Operand {
  std::vector<T> data;
  std::vector<int64_t> dims;
  std::vector<int> labels;
};

// dst[i] = src[sum_d index_d(i) * strides[d]] over the row-major index space `dims`.
template <typename T>
void StridedCopy(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, T* dst) {
  const int64_t total = ir::NumElements(dims);
  if (total == 0) return;
  const size_t rank = dims.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t j = 0; j < inner; ++j) dst[o + j] = src[off + j * inner_stride];
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= idx[d] * strides[d];
      idx[d] = 0;
    }
  }
}

int Find(const std::vector<int>& labels, int l) {
  auto it = std::find(labels.begin(), labels.end(), l);
  return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
}

// `op` laid out as `labels` with each label's size from `sizes` (a dim of 1 in `op`
// broadcasts). Every label must be in `op`, or have size 1.
template <typename T>
Operand<T> Arrange(const Operand<T>& op, const std::vector<int>& labels, const std::map<int, int64_t>& sizes) {
  const std::vector<int64_t> src_strides = Strides(op.dims);
  Operand<T> out;
  out.labels = labels;
  std::vector<int64_t> strides;
  for (int l : labels) {
    const int d = Find(op.labels, l);
    out.dims.push_back(sizes.at(l));
    strides.push_back(d < 0 || op.dims[d] == 1 ? 0 : src_strides[d]);
  }
  out.data.resize(ir::NumElements(out.dims));
  StridedCopy(op.data.data(), out.dims, strides, out.data.data());
  return out;
}

// Sums `op` over every label not in `keep`, preserving the order of the rest.
template <typename T>
Operand<T> SumOut(Operand<T> op, const std::vector<int>& keep) {
  std::vector<int> kept, removed;
  for (int l : op.labels) (Find(keep, l) >= 0 ? kept : removed).push_back(l);
  if (removed.empty()) return op;
  std::map<int, int64_t> sizes;
  for (size_t d = 0; d < op.labels.size(); ++d) sizes[op.labels[d]] = op.dims[d];
  std::vector<int> order = kept;
  order.insert(order.end(), removed.begin(), removed.end());
  Operand<T> arranged = Arrange(op, order, sizes);
  int64_t rows = 1, cols = 1;
  Operand<T> out;
  out.labels = kept;
  for (int l : kept) {
    out.dims.push_back(sizes[l]);
    rows *= sizes[l];
  }
  for (int l : removed) cols *= sizes[l];
  out.data.assign(rows, T(0));
  for (int64_t r = 0; r < rows; ++r) {
    T acc = T(0);
    for (int64_t c = 0; c < cols; ++c) acc += arranged.data[r * cols + c];
    out.data[r] = acc;
  }
  return out;
}

// Contracts a and b, keeping the labels in `keep` (plus any label only one side has
// that is in keep); result labels are [batch, a-only, b-only].
template <typename T>
Operand<T> Contract(const Operand<T>& a_in, const Operand<T>& b_in, const std::vector<int>& keep,
                    const std::map<int, int64_t>& sizes) {
  std::vector<int> keep_a = keep, keep_b = keep;
  keep_a.insert(keep_a.end(), b_in.labels.begin(), b_in.labels.end());
  keep_b.insert(keep_b.end(), a_in.labels.begin(), a_in.labels.end());
  const Operand<T> a = SumOut(a_in, keep_a);
  const Operand<T> b = SumOut(b_in, keep_b);
  std::vector<int> batch, m_labels, k_labels, n_labels;
  for (int l : a.labels) {
    if (Find(b.labels, l) < 0) {
      m_labels.push_back(l);
    } else {
      (Find(keep, l) >= 0 ? batch : k_labels).push_back(l);
    }
  }
  for (int l : b.labels) {
    if (Find(a.labels, l) < 0) n_labels.push_back(l);
  }
  auto product = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= sizes.at(l);
    return p;
  };
  const int64_t nb = product(batch), m = product(m_labels), k = product(k_labels), n = product(n_labels);
  std::vector<int> a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), m_labels.begin(), m_labels.end());
  a_order.insert(a_order.end(), k_labels.begin(), k_labels.end());
  b_order.insert(b_order.end(), k_labels.begin(), k_labels.end());
  b_order.insert(b_order.end(), n_labels.begin(), n_labels.end());
  const Operand<T> a2 = Arrange(a, a_order, sizes);
  const Operand<T> b2 = Arrange(b, b_order, sizes);
  Operand<T> out;
  out.labels = batch;
  out.labels.insert(out.labels.end(), m_labels.begin(), m_labels.end());
  out.labels.insert(out.labels.end(), n_labels.begin(), n_labels.end());
  for (int l : out.labels) out.dims.push_back(sizes.at(l));
  out.data.assign(nb * m * n, T(0));
  for (int64_t i = 0; i < nb; ++i) {
    linalg::Gemm(false, false, m, n, k, T(1), a2.data.data() + i * m * k, k, b2.data.data() + i * k * n, n, T(0),
                 out.data.data() + i * m * n, n);
  }
  return out;
}

class EinsumKernel : public Kernel {
 public:
  EinsumKernel(std::string equation, ir::EinsumEquation spec) : equation_(std::move(equation)), spec_(std::move(spec)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    if (inputs.size() != spec_.inputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("equation '", equation_, "' has ", spec_.inputs.size(),
                                                     " operands, node has ", inputs.size(), " inputs"));
    }
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, inputs.size()));
    const DataType t = inputs[0]->dtype();
    for (const Tensor* in : inputs) {
      if (in->dtype() != t) return absl::InvalidArgumentError("Einsum inputs have different types");
    }
    if (t == DataType::kFloat32) return RunTyped<float>(inputs, outputs);
    if (t == DataType::kFloat64) return RunTyped<double>(inputs, outputs);
    return absl::UnimplementedError(absl::StrCat("Einsum on ", ir::DataTypeName(t), " is not supported (FLOAT, DOUBLE)"));
  }

 private:
  template <typename T>
  absl::Status RunTyped(absl::Span<const Tensor* const> inputs, absl::Span<Tensor> outputs) const {
    // Expand "..." into right-aligned ellipsis labels and check ranks.
    const size_t count = inputs.size();
    std::vector<std::vector<int>> terms(count);
    int64_t ellipsis_rank = 0;
    for (size_t i = 0; i < count; ++i) {
      const std::vector<int>& term = spec_.inputs[i];
      const int64_t letters = static_cast<int64_t>(term.size()) - std::count(term.begin(), term.end(), kEinsumEllipsis);
      const bool has_ellipsis = letters != static_cast<int64_t>(term.size());
      const int64_t rank = inputs[i]->rank();
      if (rank < letters || (!has_ellipsis && rank != letters)) {
        return absl::InvalidArgumentError(absl::StrCat("operand ", i, " has shape ", ir::DimsToString(inputs[i]->dims()),
                                                       ", which does not fit equation '", equation_, "'"));
      }
      if (has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    }
    auto expand = [&](const std::vector<int>& term, int64_t e) {
      std::vector<int> out;
      for (int l : term) {
        if (l != kEinsumEllipsis) {
          out.push_back(l);
          continue;
        }
        for (int64_t j = 0; j < e; ++j) out.push_back(static_cast<int>(kEllipsisBase + ellipsis_rank - e + j));
      }
      return out;
    };
    std::map<int, int64_t> sizes;
    for (size_t i = 0; i < count; ++i) {
      const std::vector<int>& term = spec_.inputs[i];
      const int64_t e = inputs[i]->rank() - (static_cast<int64_t>(term.size()) -
                                             std::count(term.begin(), term.end(), kEinsumEllipsis));
      terms[i] = expand(term, e);
      for (size_t d = 0; d < terms[i].size(); ++d) {
        const int l = terms[i][d];
        const int64_t size = inputs[i]->dims()[d];
        auto [it, inserted] = sizes.try_emplace(l, size);
        if (!inserted && it->second != size) {
          if (it->second != 1 && size != 1) {
            return absl::InvalidArgumentError(absl::StrCat("label sizes ", it->second, " and ", size,
                                                           " disagree in equation '", equation_, "'"));
          }
          it->second = std::max(it->second, size);
        }
      }
    }
    const std::vector<int> out_labels = expand(spec_.output, ellipsis_rank);
    for (int l : out_labels) {
      if (sizes.count(l) == 0) {
        return absl::InvalidArgumentError(absl::StrCat("output ellipsis has no matching input dims in '", equation_, "'"));
      }
    }

    // Each operand with distinct labels: repeated labels become a diagonal view.
    std::vector<Operand<T>> ops(count);
    for (size_t i = 0; i < count; ++i) {
      const Tensor& in = *inputs[i];
      const std::vector<int64_t> strides = Strides(in.dims());
      std::vector<int64_t> view_dims, view_strides;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        const int pos = Find(ops[i].labels, terms[i][d]);
        if (pos >= 0) {
          if (view_dims[pos] != in.dims()[d]) {
            return absl::InvalidArgumentError(absl::StrCat("repeated label of operand ", i, " has sizes ",
                                                           view_dims[pos], " and ", in.dims()[d]));
          }
          view_strides[pos] += strides[d];
          continue;
        }
        ops[i].labels.push_back(terms[i][d]);
        view_dims.push_back(in.dims()[d]);
        view_strides.push_back(strides[d]);
      }
      ops[i].dims = view_dims;
      ops[i].data.resize(ir::NumElements(view_dims));
      StridedCopy(in.template data<T>(), view_dims, view_strides, ops[i].data.data());
    }

    // Contract left to right, keeping labels the output or a later operand needs.
    Operand<T> acc = std::move(ops[0]);
    for (size_t i = 1; i <= count; ++i) {
      std::vector<int> keep = out_labels;
      for (size_t j = i + (i < count ? 1 : 0); j < count; ++j) keep.insert(keep.end(), terms[j].begin(), terms[j].end());
      if (i == count) {
        acc = SumOut(std::move(acc), keep);
      } else {
        acc = Contract(acc, ops[i], keep, sizes);
      }
    }
    std::vector<int64_t> out_dims;
    for (int l : out_labels) out_dims.push_back(sizes.at(l));
    const Operand<T> result = Arrange(acc, out_labels, sizes);
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(inputs[0]->dtype(), out_dims));
    std::copy(result.data.begin(), result.data.end(), outputs[0].template data<T>());
    return absl::OkStatus();
  }

  const std::string equation_;
  const ir::EinsumEquation spec_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateEinsumKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::string equation, node.attrs().GetString("equation", ""));
  if (equation.empty()) return absl::InvalidArgumentError("Einsum needs an 'equation' attribute");
  QFUSE_ASSIGN_OR_RETURN(ir::EinsumEquation spec, ir::ParseEinsumEquation(equation));
  if (spec.inputs.size() != node.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("equation '", equation, "' has ", spec.inputs.size(),
                                                   " operands, node has ", node.inputs().size(), " inputs"));
  }
  return std::make_unique<EinsumKernel>(std::move(equation), std::move(spec));
}

}  // namespace qfuse::runtime::kernels
