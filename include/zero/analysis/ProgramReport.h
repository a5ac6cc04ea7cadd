//===- ProgramReport.h - The plan a lowered program carries -----*- C++ -*-===//
//
// The per-rank figures of zero-report (PlanReport) that travel with a
// lowered program as `zrt.report`, for the runtime and the frontends to
// hold their measurements against: bytes by category, the transient and
// gathered peaks, the traffic per collective kind (and per placement axis
// on a mesh), and with hpZ the closed formula of the bytes across nodes.
// One type, one attribute form and one JSON form: the lowering writes it,
// the builder's CompiledGraph and zero-run's metrics read it.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_PROGRAMREPORT_H
#define ZERO_ANALYSIS_PROGRAMREPORT_H

#include "zero/analysis/PlanReport.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zero {

/// Traffic per collective kind ("all_gather", "all_reduce", ...).
using TrafficByKind = std::map<std::string, TrafficCount>;

struct ProgramReport {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t slots = 0;
  int64_t masters = 0;
  int64_t modelState = 0;
  int64_t persistent = 0;
  int64_t peakTransient = 0;
  int64_t peakGathered = 0;
  TrafficByKind traffic;
  /// On a mesh, each placement axis's group size and traffic (its group
  /// size in the ring factor); empty on one axis.
  struct Axis {
    int64_t ranks = 0;
    TrafficByKind traffic;
    bool operator==(const Axis &other) const {
      return ranks == other.ranks && traffic == other.traffic;
    }
  };
  std::vector<Axis> axes;
  /// With hpZ: QuantizationPlan::acrossNodesBytes and its full-precision
  /// twin.
  std::optional<int64_t> acrossNodesBytes;
  std::optional<int64_t> acrossNodesBytesUnquantized;

  static ProgramReport fromPlan(const PlanReport &plan);
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  /// The figures `attr` (a toAttr result) holds; a missing entry reads 0.
  static ProgramReport fromAttr(mlir::DictionaryAttr attr);
  /// The same keys as the attribute ("model_state", "traffic", ...).
  llvm::json::Object toJson() const;

  bool operator==(const ProgramReport &other) const;
};

} // namespace zero

#endif // ZERO_ANALYSIS_PROGRAMREPORT_H
