//===- Ops.cpp - One builder function per train compute op ---------------===//
//
// Each function checks its operands as the op's verifier would, so that a
// mistake is reported where the user made it (naming the op and the shapes)
// instead of as a verifier failure on emitted IR.
//
//===----------------------------------------------------------------------===//

#include "GraphState.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <initializer_list>
#include <limits>

using namespace zero::frontend;
using namespace zero::frontend::detail;

namespace {

/// The graph all operands belong to, or null when one of them is invalid
/// (its error is already recorded) or they come from different graphs.
GraphState *graphOf(std::initializer_list<const Tensor *> operands,
                    const char *op) {
  GraphState *state = nullptr;
  for (const Tensor *operand : operands) {
    if (!operand->valid())
      return nullptr;
    GraphState *owner = GraphState::of(*operand);
    if (state && owner != state) {
      state->fail(absl::StrCat(op, ": operands belong to different graphs"));
      return nullptr;
    }
    state = owner;
  }
  return state;
}

Node opNode(const char *opName, std::initializer_list<const Tensor *> operands,
            Shape shape, DType dtype) {
  Node node;
  node.opName = opName;
  for (const Tensor *operand : operands)
    node.operands.push_back(GraphState::idOf(*operand));
  node.shape = std::move(shape);
  node.dtype = dtype;
  return node;
}

Tensor elementwise(const char *opName, const Tensor &lhs, const Tensor &rhs) {
  GraphState *state = graphOf({&lhs, &rhs}, opName);
  if (!state)
    return Tensor();
  if (lhs.shape() != rhs.shape() || lhs.dtype() != rhs.dtype() ||
      !isFloat(lhs.dtype()))
    return state->fail(absl::StrCat(opName,
                                    ": operands must be float tensors "
                                    "of one shape and type, got ",
                                    describe(lhs), " and ", describe(rhs)));
  return state->add(opNode(opName, {&lhs, &rhs}, lhs.shape(), lhs.dtype()));
}

Tensor unary(const char *opName, const Tensor &x) {
  GraphState *state = graphOf({&x}, opName);
  if (!state)
    return Tensor();
  if (!isFloat(x.dtype()))
    return state->fail(
        absl::StrCat(opName, ": needs a float tensor, got ", describe(x)));
  return state->add(opNode(opName, {&x}, x.shape(), x.dtype()));
}

Tensor withF64(const char *opName, const Tensor &x, const char *attr,
               double value) {
  Tensor result = unary(opName, x);
  if (result.valid())
    GraphState::of(result)->nodes.back().f64Attrs.push_back({attr, value});
  return result;
}

bool isIndex(DType dtype) { return dtype == DType::i32 || dtype == DType::i64; }

Tensor reduce(const char *opName, const Tensor &x,
              const std::vector<int64_t> &dims) {
  GraphState *state = graphOf({&x}, opName);
  if (!state)
    return Tensor();
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  bool inRange = std::all_of(sorted.begin(), sorted.end(),
                             [&](int64_t d) { return d >= 0 && d < x.rank(); });
  if (!isFloat(x.dtype()) || !inRange ||
      std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return state->fail(absl::StrCat(opName, ": dimensions ", shapeText(dims),
                                    " do not name distinct dimensions of ",
                                    describe(x)));
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (!std::binary_search(sorted.begin(), sorted.end(), d))
      shape.push_back(x.shape()[d]);
  Node node = opNode(opName, {&x}, shape, x.dtype());
  node.arrayAttrs.push_back({"dims", sorted});
  return state->add(std::move(node));
}

} // namespace

Tensor zero::frontend::add(const Tensor &l, const Tensor &r) {
  return elementwise("train.add", l, r);
}
Tensor zero::frontend::sub(const Tensor &l, const Tensor &r) {
  return elementwise("train.sub", l, r);
}
Tensor zero::frontend::mul(const Tensor &l, const Tensor &r) {
  return elementwise("train.mul", l, r);
}
Tensor zero::frontend::div(const Tensor &l, const Tensor &r) {
  return elementwise("train.div", l, r);
}
Tensor zero::frontend::neg(const Tensor &x) { return unary("train.neg", x); }
Tensor zero::frontend::exp(const Tensor &x) { return unary("train.exp", x); }
Tensor zero::frontend::log(const Tensor &x) { return unary("train.log", x); }
Tensor zero::frontend::sqrt(const Tensor &x) { return unary("train.sqrt", x); }
Tensor zero::frontend::rsqrt(const Tensor &x) {
  return unary("train.rsqrt", x);
}
Tensor zero::frontend::tanh(const Tensor &x) { return unary("train.tanh", x); }
Tensor zero::frontend::relu(const Tensor &x) { return unary("train.relu", x); }
Tensor zero::frontend::gelu(const Tensor &x, bool exact) {
  Tensor result = unary("train.gelu", x);
  if (exact && result.valid())
    GraphState::of(result)->nodes.back().unitAttrs.push_back("exact");
  return result;
}
Tensor zero::frontend::sigmoid(const Tensor &x) {
  return unary("train.sigmoid", x);
}
Tensor zero::frontend::silu(const Tensor &x) { return unary("train.silu", x); }
Tensor zero::frontend::softmax(const Tensor &x, bool safe) {
  Tensor result = unary("train.softmax", x);
  if (safe && result.valid())
    GraphState::of(result)->nodes.back().unitAttrs.push_back("safe");
  return result;
}

Tensor zero::frontend::scale(const Tensor &x, double factor) {
  return withF64("train.scale", x, "factor", factor);
}

Tensor zero::frontend::causalMask(const Tensor &x, double fill) {
  if (x.valid() && x.rank() < 2)
    return GraphState::of(x)->fail(absl::StrCat(
        "causalMask: needs at least two dimensions, got ", describe(x)));
  return withF64("train.causal_mask", x, "fill", fill);
}

Tensor zero::frontend::dropout(const Tensor &x, double rate) {
  GraphState *state = graphOf({&x}, "dropout");
  if (!state)
    return Tensor();
  if (x.rank() < 1 || !isFloat(x.dtype()))
    return state->fail(absl::StrCat(
        "dropout: needs a float tensor whose first dimension is the batch, "
        "got ",
        describe(x)));
  if (!(rate >= 0.0 && rate < 1.0))
    return state->fail(absl::StrCat(
        "dropout: the rate is PyTorch's p, in [0, 1), got ", rate));
  if (rate == 0.0)
    return x; // As PyTorch: nothing is dropped, nothing is scaled.
  Node node = opNode("train.dropout", {&x}, x.shape(), x.dtype());
  node.f64Attrs.push_back({"rate", rate});
  node.i64Attrs.push_back({"stream", state->dropouts++});
  return state->add(std::move(node));
}

Tensor zero::frontend::keyMask(const Tensor &x, const Tensor &keep,
                               double fill) {
  GraphState *state = graphOf({&x, &keep}, "keyMask");
  if (!state)
    return Tensor();
  if (x.rank() < 2 || !isFloat(x.dtype()) || !isIndex(keep.dtype()) ||
      keep.rank() != 2 || keep.shape()[0] != x.shape()[0] ||
      keep.shape()[1] != x.shape().back())
    return state->fail(absl::StrCat(
        "keyMask: needs float x [batch, ..., keys] and an integer keep "
        "[batch, keys], got x ",
        describe(x), " and keep ", describe(keep)));
  Node node = opNode("train.key_mask", {&x, &keep}, x.shape(), x.dtype());
  node.f64Attrs.push_back({"fill", fill});
  return state->add(std::move(node));
}

Tensor zero::frontend::biasAdd(const Tensor &x, const Tensor &bias) {
  GraphState *state = graphOf({&x, &bias}, "biasAdd");
  if (!state)
    return Tensor();
  if (x.rank() < 1 || bias.rank() != 1 || bias.shape()[0] != x.shape().back() ||
      x.dtype() != bias.dtype() || !isFloat(x.dtype()))
    return state->fail(absl::StrCat(
        "biasAdd: the bias must be 1-D with the input's last dimension and "
        "type, got input ",
        describe(x), " and bias ", describe(bias)));
  return state->add(
      opNode("train.bias_add", {&x, &bias}, x.shape(), x.dtype()));
}

Tensor zero::frontend::matmul(const Tensor &lhs, const Tensor &rhs,
                              Transpose transpose) {
  GraphState *state = graphOf({&lhs, &rhs}, "matmul");
  if (!state)
    return Tensor();
  bool ta = transpose == Transpose::a || transpose == Transpose::both;
  bool tb = transpose == Transpose::b || transpose == Transpose::both;
  auto mismatch = [&](const char *why) {
    return state->fail(absl::StrCat("matmul: ", why, ": ", describe(lhs),
                                    ta ? " (transposed)" : "", " x ",
                                    describe(rhs), tb ? " (transposed)" : ""));
  };
  if (lhs.rank() < 2 || rhs.rank() < 2 || lhs.dtype() != rhs.dtype() ||
      !isFloat(lhs.dtype()))
    return mismatch("needs float operands of one type with at least 2 "
                    "dimensions");
  const Shape &a = lhs.shape(), &b = rhs.shape();
  size_t ra = a.size(), rb = b.size();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], k = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (k != kb)
    return mismatch("inner dimensions differ");
  bool sharedRhs = rb == 2;
  if (!sharedRhs &&
      (ra != rb || !std::equal(a.begin(), a.end() - 2, b.begin())))
    return mismatch("batch dimensions differ");
  Shape shape(a.begin(), a.end() - 2);
  shape.push_back(m);
  shape.push_back(n);
  Node node = opNode("train.matmul", {&lhs, &rhs}, shape, lhs.dtype());
  if (ta)
    node.unitAttrs.push_back("transpose_a");
  if (tb)
    node.unitAttrs.push_back("transpose_b");
  return state->add(std::move(node));
}

Tensor zero::frontend::layerNorm(const Tensor &x, const Tensor &gamma,
                                 const Tensor &beta, double eps) {
  GraphState *state = graphOf({&x, &gamma, &beta}, "layerNorm");
  if (!state)
    return Tensor();
  Shape param = {x.rank() > 0 ? x.shape().back() : 0};
  if (x.rank() < 1 || gamma.shape() != param || beta.shape() != param ||
      gamma.dtype() != x.dtype() || beta.dtype() != x.dtype() ||
      !isFloat(x.dtype()))
    return state->fail(absl::StrCat(
        "layerNorm: gamma and beta must be 1-D with the input's last "
        "dimension and type, got input ",
        describe(x), ", gamma ", describe(gamma), ", beta ", describe(beta)));
  Node node =
      opNode("train.layer_norm", {&x, &gamma, &beta}, x.shape(), x.dtype());
  node.f64Attrs.push_back({"eps", eps});
  // The row statistics are f32 whatever the input type.
  Shape rows(x.shape().begin(), x.shape().end() - 1);
  node.extraResults = {{rows, DType::f32}, {rows, DType::f32}};
  return state->add(std::move(node));
}

Tensor zero::frontend::attention(const Tensor &q, const Tensor &k,
                                 const Tensor &v, double scale, bool causal) {
  GraphState *state = graphOf({&q, &k, &v}, "attention");
  if (!state)
    return Tensor();
  if (q.rank() < 2 || !isFloat(q.dtype()) || k.shape() != q.shape() ||
      v.shape() != q.shape() || k.dtype() != q.dtype() ||
      v.dtype() != q.dtype())
    return state->fail(absl::StrCat(
        "attention: needs query, key and value [..., seq, head_dim] of one "
        "float type, got ",
        describe(q), ", ", describe(k), " and ", describe(v)));
  if (!(scale > 0))
    return state->fail(
        absl::StrCat("attention: scale must be > 0, got ", scale));
  Node node = opNode("train.attention", {&q, &k, &v}, q.shape(), q.dtype());
  node.f64Attrs.push_back({"scale", scale});
  if (causal)
    node.unitAttrs.push_back("causal");
  // Each query row's log-sum-exp, f32, for the gradient.
  node.extraResults = {
      {Shape(q.shape().begin(), q.shape().end() - 1), DType::f32}};
  return state->add(std::move(node));
}

Tensor zero::frontend::embedding(const Tensor &table, const Tensor &ids,
                                 std::optional<int64_t> paddingIdx) {
  GraphState *state = graphOf({&table, &ids}, "embedding");
  if (!state)
    return Tensor();
  if (table.rank() != 2 || !isFloat(table.dtype()) || !isIndex(ids.dtype()))
    return state->fail(absl::StrCat(
        "embedding: needs a 2-D float table and integer ids, got table ",
        describe(table), " and ids ", describe(ids)));
  if (paddingIdx && (*paddingIdx < 0 || *paddingIdx >= table.shape()[0]))
    return state->fail(absl::StrCat("embedding: padding_idx ", *paddingIdx,
                                    " is not a row of the table ",
                                    describe(table)));
  Shape shape = ids.shape();
  shape.push_back(table.shape()[1]);
  Node node = opNode("train.embedding", {&table, &ids}, shape, table.dtype());
  if (paddingIdx)
    node.i64Attrs.push_back({"padding_idx", *paddingIdx});
  return state->add(std::move(node));
}

Tensor zero::frontend::softmaxCrossEntropy(const Tensor &logits,
                                           const Tensor &labels,
                                           std::optional<int64_t> ignoreIndex,
                                           double labelSmoothing) {
  GraphState *state = graphOf({&logits, &labels}, "softmaxCrossEntropy");
  if (!state)
    return Tensor();
  Shape rows(logits.shape().begin(),
             logits.shape().end() - (logits.rank() > 0 ? 1 : 0));
  if (logits.rank() < 2 || !isFloat(logits.dtype()) ||
      !isIndex(labels.dtype()) || labels.shape() != rows)
    return state->fail(absl::StrCat(
        "softmaxCrossEntropy: needs float logits [..., classes] and integer "
        "labels of the logits' shape without the class dimension, got "
        "logits ",
        describe(logits), " and labels ", describe(labels)));
  if (!(labelSmoothing >= 0.0 && labelSmoothing <= 1.0))
    return state->fail(absl::StrCat(
        "softmaxCrossEntropy: label_smoothing must be in [0, 1] (PyTorch's), "
        "got ",
        labelSmoothing));
  // The op takes f32 logits: 16-bit ones are cast first (gen_gpt2.py's
  // `%logits.f32`), and its gradient is cast back by train-autodiff.
  Tensor wide =
      logits.dtype() == DType::f32 ? logits : cast(logits, DType::f32);
  if (!ignoreIndex) {
    Node node =
        opNode("train.softmax_cross_entropy", {&wide, &labels}, {}, DType::f32);
    if (labelSmoothing != 0.0)
      node.f64Attrs.push_back({"label_smoothing", labelSmoothing});
    return state->add(std::move(node));
  }
  // The count is its own op so that dist-data-parallel can average it over
  // the ranks: the loss is then the global batch's mean over its real
  // labels.
  Node countNode = opNode("train.count_labels", {&labels}, {}, DType::f32);
  countNode.i64Attrs.push_back({"ignore_index", *ignoreIndex});
  Tensor count = state->add(std::move(countNode));
  Node node = opNode("train.softmax_cross_entropy", {&wide, &labels, &count},
                     {}, DType::f32);
  node.i64Attrs.push_back({"ignore_index", *ignoreIndex});
  if (labelSmoothing != 0.0)
    node.f64Attrs.push_back({"label_smoothing", labelSmoothing});
  return state->add(std::move(node));
}

Tensor zero::frontend::reduceSum(const Tensor &x,
                                 const std::vector<int64_t> &dims) {
  return reduce("train.reduce_sum", x, dims);
}

Tensor zero::frontend::reduceMean(const Tensor &x,
                                  const std::vector<int64_t> &dims) {
  return reduce("train.reduce_mean", x, dims);
}

Tensor zero::frontend::reshape(const Tensor &x, const Shape &shape) {
  GraphState *state = graphOf({&x}, "reshape");
  if (!state)
    return Tensor();
  int64_t count = 1;
  for (int64_t extent : shape)
    count = extent > 0 ? count * extent : -1;
  if (count != x.numElements())
    return state->fail(absl::StrCat("reshape: cannot reshape ", describe(x),
                                    " (", x.numElements(), " elements) to ",
                                    shapeText(shape)));
  // A reshape of a reshape reads the original (importers write view chains,
  // torch's flatten-then-unflatten around every linear layer), and a reshape
  // to the same shape is no op: the IR stays as a hand-written one reads.
  Tensor source = x;
  if (state->node(source).opName == "train.reshape")
    source = state->tensorOf(state->node(source).operands.front());
  if (source.shape() == shape)
    return source;
  return state->add(opNode("train.reshape", {&source}, shape, x.dtype()));
}

Tensor zero::frontend::transpose(const Tensor &x,
                                 const std::vector<int64_t> &permutation) {
  GraphState *state = graphOf({&x}, "transpose");
  if (!state)
    return Tensor();
  std::vector<int64_t> sorted = permutation;
  std::sort(sorted.begin(), sorted.end());
  bool isPermutation = static_cast<int64_t>(sorted.size()) == x.rank();
  for (size_t i = 0; isPermutation && i < sorted.size(); ++i)
    isPermutation = sorted[i] == static_cast<int64_t>(i);
  if (!isPermutation || !isFloat(x.dtype()))
    return state->fail(absl::StrCat("transpose: ", shapeText(permutation),
                                    " is not a permutation of the dimensions "
                                    "of ",
                                    describe(x)));
  Shape shape;
  for (int64_t d : permutation)
    shape.push_back(x.shape()[d]);
  Node node = opNode("train.transpose", {&x}, shape, x.dtype());
  node.arrayAttrs.push_back({"permutation", permutation});
  return state->add(std::move(node));
}

Tensor zero::frontend::slice(const Tensor &x, int64_t dim, int64_t offset,
                             int64_t size) {
  GraphState *state = graphOf({&x}, "slice");
  if (!state)
    return Tensor();
  if (dim < 0 || dim >= x.rank())
    return state->fail(absl::StrCat("slice: dim ", dim,
                                    " is not a dimension of ", describe(x)));
  if (offset < 0 || size < 0 || offset > x.shape()[dim] - size)
    return state->fail(absl::StrCat("slice: positions [", offset, ", ",
                                    offset + size, ") of dim ", dim,
                                    " do not fit in ", describe(x)));
  // The whole dimension is the tensor itself (torch's `x[:, :T]` with T the
  // extent), not a copy.
  if (size == x.shape()[dim])
    return x;
  Shape shape = x.shape();
  shape[dim] = size;
  Node node = opNode("train.slice", {&x}, shape, x.dtype());
  node.i64Attrs = {{"dim", dim}, {"offset", offset}};
  return state->add(std::move(node));
}

Tensor zero::frontend::concat(const std::vector<Tensor> &xs, int64_t dim) {
  if (xs.empty())
    return Tensor();
  std::vector<const Tensor *> operands;
  for (const Tensor &x : xs)
    operands.push_back(&x);
  GraphState *state = nullptr;
  for (const Tensor *x : operands) {
    GraphState *owner = graphOf({x}, "concat");
    if (!owner)
      return Tensor();
    if (state && owner != state)
      return state->fail("concat: operands belong to different graphs");
    state = owner;
  }
  const Tensor &first = xs.front();
  if (dim < 0 || dim >= first.rank())
    return state->fail(absl::StrCat(
        "concat: dim ", dim, " is not a dimension of ", describe(first)));
  Shape shape = first.shape();
  shape[dim] = 0;
  for (const Tensor &x : xs) {
    Shape expected = first.shape();
    expected[dim] = x.rank() == first.rank() ? x.shape()[dim] : -1;
    if (x.dtype() != first.dtype() || x.shape() != expected)
      return state->fail(absl::StrCat(
          "concat: operands must agree in type and in every dim but ", dim,
          ", got ", describe(first), " and ", describe(x)));
    shape[dim] += x.shape()[dim];
  }
  Node node;
  node.opName = "train.concat";
  for (const Tensor *x : operands)
    node.operands.push_back(GraphState::idOf(*x));
  node.shape = shape;
  node.dtype = first.dtype();
  node.i64Attrs = {{"dim", dim}};
  return state->add(std::move(node));
}

Tensor zero::frontend::expand(const Tensor &x, const Shape &shape,
                              const std::vector<int64_t> &dims) {
  GraphState *state = graphOf({&x}, "expand");
  if (!state)
    return Tensor();
  bool ascending = std::is_sorted(dims.begin(), dims.end()) &&
                   std::adjacent_find(dims.begin(), dims.end()) == dims.end();
  Shape kept;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d))
      kept.push_back(shape[d]);
  bool inRange = std::all_of(dims.begin(), dims.end(), [&](int64_t d) {
    return d >= 0 && d < static_cast<int64_t>(shape.size());
  });
  if (!isFloat(x.dtype()) || !ascending || !inRange || kept != x.shape())
    return state->fail(
        absl::StrCat("expand: cannot broadcast ", describe(x), " to ",
                     shapeText(shape), " by inserting dims ", shapeText(dims),
                     " (removing them from the shape must give the input's)"));
  Node node = opNode("train.expand", {&x}, shape, x.dtype());
  node.arrayAttrs.push_back({"dims", dims});
  return state->add(std::move(node));
}

Tensor zero::frontend::cast(const Tensor &x, DType dtype) {
  GraphState *state = graphOf({&x}, "cast");
  if (!state)
    return Tensor();
  if (!isFloat(x.dtype()) || !isFloat(dtype))
    return state->fail(absl::StrCat("cast: converts between float types, got ",
                                    describe(x), " to ", dtypeName(dtype)));
  return state->add(opNode("train.cast", {&x}, x.shape(), dtype));
}
