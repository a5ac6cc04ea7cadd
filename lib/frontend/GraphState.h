//===- GraphState.h - What a Graph records, before any MLIR ----*- C++ -*-===//
//
// The builder records the step as a list of nodes (one per value) and emits
// MLIR only in `compile`: building stays cheap and context-free, and the
// same graph can be compiled for several rank counts and configurations.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_LIB_FRONTEND_GRAPHSTATE_H
#define ZERO_LIB_FRONTEND_GRAPHSTATE_H

#include "zero/frontend/Graph.h"

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace zero::frontend::detail {

/// One value of the step and the op that defines it.
struct Node {
  enum class Kind { input, parameter, op };
  Kind kind = Kind::op;
  /// Index into GraphState::inputs or ::parameters for those kinds.
  int index = -1;
  /// The op ("train.matmul", ...) for Kind::op.
  std::string opName;
  std::vector<int> operands;
  Shape shape;
  DType dtype = DType::f32;
  /// Inherent attributes, by the op's attribute names.
  std::vector<std::string> unitAttrs;
  std::vector<std::pair<std::string, double>> f64Attrs;
  std::vector<std::pair<std::string, std::vector<int64_t>>> arrayAttrs;
  std::vector<std::pair<std::string, int64_t>> i64Attrs;
  /// The element value of an "arith.constant" node (a splat: the lowering
  /// fills it, and train-autodiff passes no gradient through it).
  double splatValue = 0.0;
  /// Results after the first (layer_norm's row statistics), never used by
  /// the forward pass but part of the op.
  std::vector<std::pair<Shape, DType>> extraResults;
};

struct InputDecl {
  std::string name;
  int node = -1;
};

struct ParameterDecl {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  Init init;
  bool trainable = true;
  int node = -1;
};

struct GraphState {
  std::string name;
  GraphConfig config;
  /// A deque: adding a node leaves references to the others valid.
  /// Tensor::shape() returns one, which a call such as
  /// `expand(rsqrt(y), x.shape(), dims)` may hold while rsqrt adds a node.
  std::deque<Node> nodes;
  std::vector<InputDecl> inputs;
  std::vector<ParameterDecl> parameters;
  int lossNode = -1;
  /// The dropouts made so far: each draws from its own stream.
  int64_t dropouts = 0;
  /// Graph::output's values by name, in declaration order.
  std::vector<std::pair<std::string, int>> outputs;
  absl::Status firstError;
  /// The error of the op that failed last: what a frontend that reports
  /// errors at the op (Python) raises.
  absl::Status lastError;
  /// Every failure, in order (a user's mistakes: few).
  std::vector<absl::Status> errors;
  /// The configured precision as read by the first declaration (a
  /// parameter or an input); compile checks that it has not changed since.
  std::optional<DType> precisionRead;
  /// How many RecomputeScopes are open: while positive, every op added gets
  /// the `train.recompute` mark.
  int recomputeDepth = 0;
  /// How many of them keep matmul and attention results
  /// (RecomputePolicy::exceptMatmuls).
  int keepMatmulsDepth = 0;
  /// How many of them keep attention and every other matmul
  /// (RecomputePolicy::everyOtherMatmul), and the matmuls added since the
  /// innermost such scope opened: the first, third, ... are kept.
  int alternateMatmulsDepth = 0;
  int64_t matmulsInScope = 0;

  /// Opens and closes a recompute scope (RecomputeScope, and the layers
  /// that checkpoint their blocks).
  void openRecompute(RecomputePolicy policy);
  void closeRecompute(RecomputePolicy policy);

  /// A splat constant of exactly `dtype`, not the configured precision: the
  /// f32 epsilon of a 16-bit model's RMSNorm, which computes in f32.
  Tensor constant(const Shape &shape, double value, DType dtype);

  /// The type a parameter or input declared `dtype` gets: f32 becomes the
  /// precision (read now if nothing was declared yet); an integer precision
  /// leaves it f32, for compile to report.
  DType declaredType(DType dtype);

  /// Records `message` unless an earlier error is recorded; returns an
  /// invalid tensor for the caller to hand back.
  Tensor fail(const std::string &message);
  Tensor add(Node node);
  Tensor tensorOf(int id) { return Tensor(this, id); }
  const Node &node(const Tensor &tensor) const { return nodes[tensor.id]; }

  static GraphState *of(const Tensor &tensor) { return tensor.state; }
  static int idOf(const Tensor &tensor) { return tensor.id; }
  Parameter parameterHandle(int index) { return Parameter(this, index); }
  static GraphState *of(const Parameter &param) { return param.state; }
  static int indexOf(const Parameter &param) { return param.index; }
};

/// "[32, 784]".
std::string shapeText(const Shape &shape);
/// "tensor [32, 784] of f32".
std::string describe(const Tensor &tensor);

/// Records `message` for the layer `kind` `name` in the graph of `x`.
Tensor layerError(const Tensor &x, const char *kind, const std::string &name,
                  const std::string &message);

} // namespace zero::frontend::detail

#endif // ZERO_LIB_FRONTEND_GRAPHSTATE_H
