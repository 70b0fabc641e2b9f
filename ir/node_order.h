// The nodes of an ONNX graph put in an order where every node follows the producers of its
// inputs, as onnxruntime runs them: tools that append nodes (float16 converters' input Casts,
// graph surgery scripts) write valid graphs out of order, which ONNX's checker refuses.
#ifndef QFUSE_IR_NODE_ORDER_H_
#define QFUSE_IR_NODE_ORDER_H_

#include "onnx/onnx_pb.h"

namespace qfuse::ir {

// Reorders `graph`'s nodes topologically, keeping the file's order wherever it already is one
// (each node goes as early as its inputs allow, ties by file position). Inputs a node's
// subgraphs read from this graph count as its inputs; an input nothing produces puts no
// constraint (the checker names it). Returns false, with the nodes untouched, when no order
// exists (a cycle).
bool SortNodesTopologically(onnx::GraphProto* graph);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_NODE_ORDER_H_
