// The table of int8 forms (ir/int8_forms.h) on hand-picked nodes: what runs int8, what keeps
// its input's quantization, what is a pass-through, and that an Add of a constant runs float.
#include "ir/int8_forms.h"

#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"

namespace qfuse::ir {
namespace {

TEST(Int8FormsTest, EachOpInItsClass) {
  testing::GraphBuilder b;
  Value* x = b.Input("x", {1, 2, 4, 4});
  Value* y = b.Input("y", {1, 2, 4, 4});
  auto node = [](Value* v) { return *v->producer(); };
  const Node& conv = node(b.Op("Conv", {x, b.Random("w", {2, 2, 1, 1})}, "conv"));
  const Node& add2 = node(b.Op("Add", {x, y}, "add2"));
  const Node& add_const = node(b.Op("Add", {x, b.Random("shift", {1, 2, 1, 1})}, "add_const"));
  const Node& relu = node(b.Op("Relu", {x}, "relu"));
  const Node& gap = node(b.Op("GlobalAveragePool", {x}, "gap"));
  const Node& maxpool = node(b.Op("MaxPool", {x}, "maxpool"));
  const Node& sigmoid = node(b.Op("Sigmoid", {x}, "sigmoid"));
  const Node& concat = node(b.Op("Concat", {x, y}, "concat"));

  EXPECT_TRUE(HasInt8Form(conv));
  EXPECT_FALSE(IsInt8PassThrough(conv));
  EXPECT_TRUE(HasInt8Form(add2));
  EXPECT_TRUE(IsInt8PassThrough(add2));
  EXPECT_FALSE(HasInt8Form(add_const));  // an unfolded BN's shift: float
  EXPECT_TRUE(HasInt8Form(relu));
  EXPECT_FALSE(KeepsInputQuantization(relu));
  EXPECT_TRUE(HasInt8Form(gap));
  EXPECT_TRUE(IsAveragePool(gap));
  EXPECT_FALSE(KeepsInputQuantization(gap));  // its scale is derived, not kept
  EXPECT_TRUE(KeepsInputQuantization(maxpool));
  EXPECT_TRUE(IsInt8PassThrough(maxpool));
  EXPECT_FALSE(HasInt8Form(sigmoid));
  EXPECT_FALSE(IsInt8PassThrough(sigmoid));
  EXPECT_TRUE(HasInt8Form(concat));
  EXPECT_TRUE(IsInt8PassThrough(concat));
  // Resize moves bytes only in mode nearest (the default); linear computes new values.
  ir::AttributeMap linear_mode;
  linear_mode.Set("mode", std::string("linear"));
  const Node& nearest = node(b.Op("Resize", {x}, "nearest"));
  const Node& linear = node(b.Op("Resize", {x}, "linear", {}, linear_mode));
  EXPECT_TRUE(KeepsInputQuantization(nearest));
  EXPECT_TRUE(IsInt8PassThrough(nearest));
  EXPECT_FALSE(KeepsInputQuantization(linear));
  EXPECT_FALSE(HasInt8Form(linear));
}

}  // namespace
}  // namespace qfuse::ir
