//===- PlanReportPrinting.cpp - The plan report as text and JSON ----------===//
//
// zero-report's forms of a PlanReport (computed in PlanReport.cpp): the text
// a user reads, with the ZeRO formula and each axis's traffic, the JSON a
// program reads, and the lowered program's memory plan.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/PlanReport.h"

#include "llvm/ADT/StringExtras.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace zero {

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// llvm::format takes pointers, not arrays.
static const char *cstr(const char *text) { return text; }

static void printRow(llvm::raw_ostream &os, StringRef name,
                     const ByteCount &count) {
  os << llvm::format("  %-18s %14lld B", name.str().c_str(),
                     static_cast<long long>(count.bytes));
  if (count.padding > 0.0)
    os << llvm::format("   (padding %.1f B)", count.padding);
  os << "\n";
}

static StringRef formulaText(int64_t stage) {
  switch (stage) {
  case 1:
    return "(P+G)Ψ + KΨ/N";
  case 2:
    return "PΨ + (G+K)Ψ/N";
  case 3:
    return "(P+G+K)Ψ/N";
  default:
    return "(P+G+K)Ψ";
  }
}

static void printTrainingPlan(const PlanReport &report, llvm::raw_ostream &os) {
  os << "ZeRO plan: ";
  if (report.stage < 0)
    os << "not data parallel";
  else
    os << "stage " << report.stage;
  os << ", " << report.ranks << " rank(s)";
  if (!report.placement.empty())
    os << " on " << report.placement;
  // Said either way: a module imported in eval mode trains without it.
  if (report.dropout.ops == 0) {
    os << ", no dropout";
  } else {
    os << ", dropout on in training steps (" << report.dropout.ops
       << " op(s), p";
    for (double rate : report.dropout.rates)
      os << " " << llvm::format("%g", rate);
    os << ")";
  }
  os << "\nPer rank (every rank holds the same):\n";
  printRow(os, "parameters", report.parameters);
  printRow(os, "gradients", report.gradients);
  // Stage 2 shards gradients by reducing each as its bucket fills; with one
  // bucket for them all, each is held whole until the last is produced, and
  // a reader of "stage 2" expects 1/N.
  const ZeroFormula &shares = report.formula;
  double whole = shares.gradBytesPerElement * shares.trainableElements;
  auto scatters = report.traffic.find("reduce_scatter");
  if (report.stage == 2 && scatters != report.traffic.end() &&
      scatters->second.count == 1 && shares.ranks > 1 &&
      report.gradients.bytes - report.gradients.padding >= 0.99 * whole)
    os << llvm::format(
        "    (whole, not 1/N: one reduce-scatter bucket takes every gradient, "
        "so each is held until the backward ends; reduce-bucket-bytes "
        "(zero.reduce_bucket_bytes) below %.0f B scatters them in several)\n",
        whole);
  printRow(os, "optimizer slots", report.slots);
  printRow(os, "master copies", report.masters);
  ByteCount state = report.modelState();
  printRow(os, "model state", state);
  os << llvm::format("  %-18s %14lld B   (in %s)\n", cstr("peak transient"),
                     static_cast<long long>(report.peakTransientBytes),
                     report.peakFunction.c_str());
  // Stage 3 only: the other stages gather no parameters for compute.
  if (report.stage == 3)
    os << llvm::format("  %-18s %14lld B   (gathered parameters alive at "
                       "once, within the peak transient)\n",
                       cstr("peak gathered"),
                       static_cast<long long>(report.peakGatheredBytes));
  os << llvm::format("  %-18s %14lld B\n", cstr("total"),
                     static_cast<long long>(report.persistentBytes +
                                            report.peakTransientBytes));

  if (report.groups.size() > 1) {
    os << "Parameter groups (each its own optimizer):\n";
    for (const OptimizerGroup &group : report.groups)
      os << llvm::format("  %-18s %6lld parameters %14lld elements   lr "
                         "%-10g weight decay %g\n",
                         ("@" + group.optimizer).c_str(),
                         static_cast<long long>(group.parameters),
                         static_cast<long long>(group.elements), group.lr,
                         group.weightDecay);
  }

  const ZeroFormula &f = report.formula;
  os << "Formula (P=" << llvm::format("%.3g", f.paramBytesPerElement)
     << ", G=" << llvm::format("%.3g", f.gradBytesPerElement)
     << ", K=" << llvm::format("%.3g", f.optimizerBytesPerElement)
     << ", Ψ=" << f.trainableElements
     << (report.grid.size() > 1 && f.ranks == report.grid.back() ? ", S="
                                                                 : ", N=")
     << f.ranks;
  if (f.frozenElements)
    os << ", frozen " << f.frozenElements << " elements";
  os << "):\n";
  double unpadded = state.bytes - state.padding;
  os << llvm::format("  %-18s %16.1f B   ", cstr("model state"),
                     f.modelStateBytes)
     << formulaText(report.stage < 0 ? 0 : report.stage);
  if (f.frozenElements)
    os << (report.stage == 3 ? " + frozen/N" : " + frozen");
  double gap = unpadded - f.modelStateBytes;
  if (std::abs(gap) < 0.5)
    os << "; the plan matches it up to padding\n";
  else
    os << llvm::format("; the plan differs by %.1f B beyond padding\n", gap);

  os << "Per step traffic (ring: each rank sends (N-1)/N of the payload):\n";
  os << llvm::format("  %-16s %6s %14s %14s %16s\n", cstr("collective"),
                     cstr("count"), cstr("elements"), cstr("bytes"),
                     cstr("sent per rank"));
  int64_t volume = 0;
  for (const auto &[kind, count] : report.traffic) {
    os << llvm::format("  %-16s %6lld %14lld %14lld %14.1f B\n", kind.c_str(),
                       static_cast<long long>(count.count),
                       static_cast<long long>(count.elements),
                       static_cast<long long>(count.bytes),
                       count.sentBytesPerRank);
    volume += count.volumeElements;
  }
  if (report.stage < 0) {
    os << llvm::format("  %-16s %14lld elements (all-reduce counted twice); "
                       "no formula: the step is not data parallel\n",
                       cstr("volume"), static_cast<long long>(volume));
    return;
  }
  std::string formula = report.stage == 3 ? "3Ψ" : "2Ψ";
  if (report.grid.size() > 1)
    formula +=
        report.stage == 0
            ? " on each of the " + std::to_string(report.grid.size()) + " axes"
            : " within a node + " + std::to_string(f.acrossNodesShards) +
                  "Ψ/S across nodes";
  os << llvm::format("  %-16s %14lld elements (all-reduce counted twice); "
                     "formula %s = %.0f\n",
                     cstr("volume"), static_cast<long long>(volume),
                     formula.c_str(), f.trafficElements);
  if (report.grid.size() < 2)
    return;
  if (const std::optional<QuantizationPlan> &plan = report.quantization) {
    std::vector<std::string> what;
    if (plan->weights)
      what.push_back(llvm::formatv("qwZ gathers int{0}", plan->weightBits));
    if (plan->gradients)
      what.push_back(
          llvm::formatv("qgZ reductions int{0}", plan->gradientBits));
    os << llvm::format("  %-16s %s, in blocks of %lld; full precision "
                       "across nodes below %lld elements per shard: %zu "
                       "tensors",
                       cstr("quantized"), llvm::join(what, ", ").c_str(),
                       static_cast<long long>(plan->block),
                       static_cast<long long>(plan->minElements),
                       plan->fullPrecision.size());
    if (!plan->fullPrecision.empty()) {
      constexpr size_t kShown = 8;
      std::vector<std::string> shown(
          plan->fullPrecision.begin(),
          plan->fullPrecision.begin() +
              std::min(kShown, plan->fullPrecision.size()));
      os << " (" << llvm::join(shown, ", ")
         << (plan->fullPrecision.size() > kShown ? ", ..." : "") << ")";
    }
    os << "\n";
    if (plan->acrossNodesBytes >= 0)
      os << llvm::format(
          "  %-16s %14lld B per step, formula: the sharded state's gathers "
          "and reductions, codes + 4 B per block where quantized; %lld B in "
          "full precision: %.2fx\n",
          cstr("across nodes"), static_cast<long long>(plan->acrossNodesBytes),
          static_cast<long long>(plan->acrossNodesBytesUnquantized),
          plan->acrossNodesBytesUnquantized > 0
              ? static_cast<double>(plan->acrossNodesBytes) /
                    static_cast<double>(plan->acrossNodesBytesUnquantized)
              : 0.0);
  }
  // The same collectives by the axis they run over: what each level of
  // the mesh carries.
  for (const auto &[axis, kinds] : report.axisTraffic) {
    TrafficCount total;
    for (const auto &entry : kinds) {
      total.count += entry.second.count;
      total.elements += entry.second.elements;
      total.bytes += entry.second.bytes;
      total.sentBytesPerRank += entry.second.sentBytesPerRank;
    }
    std::string name = "axis " + std::to_string(axis);
    os << llvm::format("  %-16s %6lld %14lld %14lld %14.1f B   (%lld ranks, "
                       "%s)\n",
                       name.c_str(), static_cast<long long>(total.count),
                       static_cast<long long>(total.elements),
                       static_cast<long long>(total.bytes),
                       total.sentBytesPerRank,
                       static_cast<long long>(report.grid[axis]),
                       cstr(axis == 0 ? "across nodes" : "within a node"));
  }
}

static llvm::json::Object toJson(const ByteCount &count) {
  return llvm::json::Object{{"bytes", count.bytes},
                            {"padding_bytes", count.padding}};
}

static llvm::json::Object
trafficToJson(const std::map<std::string, TrafficCount> &kinds) {
  llvm::json::Object traffic;
  for (const auto &[kind, count] : kinds)
    traffic[kind] =
        llvm::json::Object{{"count", count.count},
                           {"elements", count.elements},
                           {"bytes", count.bytes},
                           {"volume_elements", count.volumeElements},
                           {"sent_bytes_per_rank", count.sentBytesPerRank}};
  return traffic;
}

llvm::json::Array optimizerGroupsToJson(llvm::ArrayRef<OptimizerGroup> groups) {
  llvm::json::Array array;
  for (const OptimizerGroup &group : groups)
    array.push_back(llvm::json::Object{{"optimizer", group.optimizer},
                                       {"kind", group.kind},
                                       {"lr", group.lr},
                                       {"weight_decay", group.weightDecay},
                                       {"parameters", group.parameters},
                                       {"elements", group.elements}});
  return array;
}

llvm::json::Object quantizationPlanToJson(const QuantizationPlan &plan) {
  llvm::json::Array names;
  for (const std::string &name : plan.fullPrecision)
    names.push_back(name);
  llvm::json::Object object{{"weights", plan.weights},
                            {"gradients", plan.gradients},
                            {"weight_bits", plan.weightBits},
                            {"gradient_bits", plan.gradientBits},
                            {"block", plan.block},
                            {"min_elements", plan.minElements},
                            {"full_precision", std::move(names)}};
  if (plan.acrossNodesBytes >= 0) {
    object["across_nodes_bytes"] = plan.acrossNodesBytes;
    object["across_nodes_bytes_unquantized"] = plan.acrossNodesBytesUnquantized;
  }
  return object;
}

llvm::json::Object dropoutToJson(const DropoutSummary &dropout) {
  return llvm::json::Object{{"ops", dropout.ops},
                            {"rates", llvm::json::Array(dropout.rates)}};
}

static llvm::json::Value trainingPlanToJson(const PlanReport &report) {
  llvm::json::Object traffic = trafficToJson(report.traffic);
  llvm::json::Array axes;
  for (size_t axis = 0; axis < report.grid.size(); ++axis) {
    auto found = report.axisTraffic.find(static_cast<int64_t>(axis));
    axes.push_back(
        llvm::json::Object{{"axis", static_cast<int64_t>(axis)},
                           {"ranks", report.grid[axis]},
                           {"traffic", found == report.axisTraffic.end()
                                           ? llvm::json::Object()
                                           : trafficToJson(found->second)}});
  }
  llvm::json::Array groups = optimizerGroupsToJson(report.groups);
  const ZeroFormula &f = report.formula;
  ByteCount state = report.modelState();
  llvm::json::Object quantization;
  if (report.quantization)
    quantization = quantizationPlanToJson(*report.quantization);
  llvm::json::Object result{
      {"stage", report.stage},
      {"ranks", report.ranks},
      {"placement", report.placement},
      {"dropout", dropoutToJson(report.dropout)},
      {"per_rank",
       llvm::json::Object{{"parameters", toJson(report.parameters)},
                          {"gradients", toJson(report.gradients)},
                          {"optimizer_slots", toJson(report.slots)},
                          {"master_copies", toJson(report.masters)},
                          {"model_state", toJson(state)},
                          {"persistent_bytes", report.persistentBytes},
                          {"peak_transient_bytes", report.peakTransientBytes},
                          {"peak_function", report.peakFunction},
                          {"peak_gathered_bytes", report.peakGatheredBytes},
                          {"total_bytes", report.persistentBytes +
                                              report.peakTransientBytes}}},
      {"traffic", std::move(traffic)},
      {"axes", std::move(axes)},
      {"parameter_groups", std::move(groups)},
      {"formula",
       llvm::json::Object{
           {"trainable_elements", f.trainableElements},
           {"frozen_elements", f.frozenElements},
           {"param_bytes_per_element", f.paramBytesPerElement},
           {"grad_bytes_per_element", f.gradBytesPerElement},
           {"optimizer_bytes_per_element", f.optimizerBytesPerElement},
           {"model_state_bytes", f.modelStateBytes},
           {"traffic_elements", f.trafficElements},
           {"mesh_scheme", f.meshScheme}}}};
  if (report.quantization)
    result["quantization"] = std::move(quantization);
  return result;
}

//===----------------------------------------------------------------------===//
// The memory plan of a lowered program
//===----------------------------------------------------------------------===//

DictionaryAttr MemoryPlan::toAttr(MLIRContext *context) const {
  Builder builder(context);
  auto bytes = [&](int64_t value) { return builder.getI64IntegerAttr(value); };
  SmallVector<Attribute> lines;
  for (const std::string &line : decisions)
    lines.push_back(builder.getStringAttr(line));
  return builder.getDictionaryAttr(
      {builder.getNamedAttr("offload", builder.getStringAttr(offload)),
       builder.getNamedAttr("budget", bytes(budget)),
       builder.getNamedAttr("device_persistent", bytes(devicePersistent)),
       builder.getNamedAttr("device_arena", bytes(deviceArena)),
       builder.getNamedAttr("host_persistent", bytes(hostPersistent)),
       builder.getNamedAttr("host_arena", bytes(hostArena)),
       builder.getNamedAttr("host_link_bytes", bytes(hostLinkBytes)),
       builder.getNamedAttr("decisions", builder.getArrayAttr(lines))});
}

MemoryPlan MemoryPlan::fromAttr(DictionaryAttr attr) {
  MemoryPlan plan;
  auto bytes = [&](StringRef name) -> int64_t {
    auto value = attr.getAs<IntegerAttr>(name);
    return value ? value.getInt() : 0;
  };
  if (auto offload = attr.getAs<StringAttr>("offload"))
    plan.offload = offload.str();
  plan.budget = bytes("budget");
  plan.devicePersistent = bytes("device_persistent");
  plan.deviceArena = bytes("device_arena");
  plan.hostPersistent = bytes("host_persistent");
  plan.hostArena = bytes("host_arena");
  plan.hostLinkBytes = bytes("host_link_bytes");
  if (auto lines = attr.getAs<ArrayAttr>("decisions"))
    for (auto line : lines.getAsRange<StringAttr>())
      plan.decisions.push_back(line.str());
  return plan;
}

/// How much larger the planned arena is than the tensor-level peak transient
/// bytes (what the training plan counts): padding, buckets and collectives
/// in flight, and offsets that do not pack perfectly. 0 when there is none.
static double arenaOverTensorPeak(const MemoryPlan &plan,
                                  int64_t peakTransientBytes) {
  return peakTransientBytes > 0 ? static_cast<double>(plan.deviceArena) /
                                      static_cast<double>(peakTransientBytes)
                                : 0.0;
}

static void printMemoryPlan(const MemoryPlan &plan, int64_t peakTransientBytes,
                            llvm::raw_ostream &os) {
  os << "Memory plan of the lowered program (offload=" << plan.offload;
  if (plan.budget > 0)
    os << ", device budget " << plan.budget << " B";
  os << "):\n";
  auto row = [&](const char *name, int64_t value) {
    os << llvm::format("  %-18s %14lld B\n", name,
                       static_cast<long long>(value));
  };
  row("device persistent", plan.devicePersistent);
  row("device arena", plan.deviceArena);
  if (peakTransientBytes > 0)
    os << llvm::format("  %-18s %14.3f x the tensor-level peak transient\n",
                       static_cast<const char *>("arena / peak"),
                       arenaOverTensorPeak(plan, peakTransientBytes));
  row("device total", plan.deviceBytes());
  row("host persistent", plan.hostPersistent);
  row("host arena", plan.hostArena);
  row("host total", plan.hostBytes());
  row("host link / step", plan.hostLinkBytes);
  for (const std::string &line : plan.decisions)
    os << "  " << line << "\n";
}

void printPlanReport(const PlanReport &report, llvm::raw_ostream &os) {
  printTrainingPlan(report, os);
  if (report.memory)
    printMemoryPlan(*report.memory, report.peakTransientBytes, os);
  if (report.prediction)
    printPrediction(*report.prediction, os);
  if (!report.prediction || report.fitAlternatives.empty())
    return;
  int64_t card = report.prediction->machine.deviceMemory;
  os << llvm::format("To fit %lld B (%.2f GiB) a device, each planned on a "
                     "copy of the step:\n",
                     static_cast<long long>(card),
                     card / (1024.0 * 1024.0 * 1024.0));
  for (const FitAlternative &alternative : report.fitAlternatives)
    os << llvm::format("  %-48s peak %14lld B (%s), step %.4f ms\n",
                       alternative.change.c_str(),
                       static_cast<long long>(alternative.peakDeviceBytes),
                       alternative.peakDeviceBytes <= card ? "fits"
                                                           : "does not fit",
                       alternative.stepSeconds * 1e3);
}

llvm::json::Object memoryPlanToJson(const MemoryPlan &plan) {
  llvm::json::Array decisions;
  for (const std::string &line : plan.decisions)
    decisions.push_back(line);
  return llvm::json::Object{{"offload", plan.offload},
                            {"device_budget_bytes", plan.budget},
                            {"device_persistent_bytes", plan.devicePersistent},
                            {"device_arena_bytes", plan.deviceArena},
                            {"device_bytes", plan.deviceBytes()},
                            {"host_persistent_bytes", plan.hostPersistent},
                            {"host_arena_bytes", plan.hostArena},
                            {"host_bytes", plan.hostBytes()},
                            {"host_link_bytes_per_step", plan.hostLinkBytes},
                            {"decisions", std::move(decisions)}};
}

llvm::json::Value planReportToJson(const PlanReport &report) {
  llvm::json::Value value = trainingPlanToJson(report);
  if (report.memory) {
    llvm::json::Object plan = memoryPlanToJson(*report.memory);
    plan["arena_over_tensor_peak"] =
        arenaOverTensorPeak(*report.memory, report.peakTransientBytes);
    (*value.getAsObject())["memory_plan"] = std::move(plan);
  }
  if (report.prediction)
    (*value.getAsObject())["prediction"] = predictionToJson(*report.prediction);
  if (report.prediction && !report.fitAlternatives.empty()) {
    llvm::json::Array alternatives;
    for (const FitAlternative &alternative : report.fitAlternatives)
      alternatives.push_back(llvm::json::Object{
          {"change", alternative.change},
          {"peak_device_bytes", alternative.peakDeviceBytes},
          {"fits", alternative.peakDeviceBytes <=
                       report.prediction->machine.deviceMemory},
          {"step_seconds", alternative.stepSeconds}});
    (*value.getAsObject())["fit_alternatives"] = std::move(alternatives);
  }
  return value;
}

LogicalResult writePlanReport(const PlanReport &report, ReportFormat format,
                              StringRef output, Location loc) {
  if (format == ReportFormat::timeline) {
    if (!report.prediction)
      return mlir::emitError(loc)
             << "zero-report: a timeline is the predicted step: it needs "
                "machine=";
    return writePrediction(*report.prediction, format, output, loc);
  }
  return writeReportOutput(output, loc, [&](llvm::raw_ostream &os) {
    if (format == ReportFormat::json)
      os << llvm::formatv("{0:2}", planReportToJson(report)) << "\n";
    else
      printPlanReport(report, os);
  });
}

LogicalResult
writeReportOutput(StringRef output, Location loc,
                  llvm::function_ref<void(llvm::raw_ostream &)> write) {
  if (output == "-") {
    write(llvm::errs());
    llvm::errs().flush();
    return success();
  }
  std::error_code error;
  llvm::raw_fd_ostream file(output, error, llvm::sys::fs::OF_Text);
  if (error)
    return mlir::emitError(loc) << "zero-report: cannot write '" << output
                                << "': " << error.message();
  write(file);
  file.flush();
  return success();
}

} // namespace zero
