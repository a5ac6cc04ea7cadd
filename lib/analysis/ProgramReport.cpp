//===- ProgramReport.cpp - The plan a lowered program carries -------------===//

#include "zero/analysis/ProgramReport.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace zero;

static TrafficByKind trafficOf(const std::map<std::string, TrafficCount> &in) {
  TrafficByKind out;
  // The program carries what a rank measures of a collective kind: how
  // many, their bytes and what each rank sends.
  for (const auto &[kind, count] : in) {
    TrafficCount &carried = out[kind];
    carried.count = count.count;
    carried.bytes = count.bytes;
    carried.sentBytesPerRank = count.sentBytesPerRank;
  }
  return out;
}

ProgramReport ProgramReport::fromPlan(const PlanReport &plan) {
  ProgramReport report;
  report.parameters = plan.parameters.bytes;
  report.gradients = plan.gradients.bytes;
  report.slots = plan.slots.bytes;
  report.masters = plan.masters.bytes;
  report.modelState = plan.modelState().bytes;
  report.persistent = plan.persistentBytes;
  report.peakTransient = plan.peakTransientBytes;
  report.peakGathered = plan.peakGatheredBytes;
  report.traffic = trafficOf(plan.traffic);
  if (plan.grid.size() > 1)
    for (size_t axis = 0; axis < plan.grid.size(); ++axis) {
      auto found = plan.axisTraffic.find(static_cast<int64_t>(axis));
      report.axes.push_back({plan.grid[axis], found == plan.axisTraffic.end()
                                                  ? TrafficByKind()
                                                  : trafficOf(found->second)});
    }
  if (plan.quantization && plan.quantization->acrossNodesBytes >= 0) {
    report.acrossNodesBytes = plan.quantization->acrossNodesBytes;
    report.acrossNodesBytesUnquantized =
        plan.quantization->acrossNodesBytesUnquantized;
  }
  return report;
}

static DictionaryAttr trafficAttr(Builder &builder,
                                  const TrafficByKind &traffic) {
  SmallVector<NamedAttribute> kinds;
  for (const auto &[kind, figures] : traffic)
    kinds.push_back(builder.getNamedAttr(
        kind, builder.getDictionaryAttr(
                  {builder.getNamedAttr(
                       "count", builder.getI64IntegerAttr(figures.count)),
                   builder.getNamedAttr(
                       "bytes", builder.getI64IntegerAttr(figures.bytes)),
                   builder.getNamedAttr(
                       "sent_bytes_per_rank",
                       builder.getF64FloatAttr(figures.sentBytesPerRank))})));
  return builder.getDictionaryAttr(kinds);
}

DictionaryAttr ProgramReport::toAttr(MLIRContext *context) const {
  Builder builder(context);
  auto integer = [&](StringRef name, int64_t value) {
    return builder.getNamedAttr(name, builder.getI64IntegerAttr(value));
  };
  SmallVector<NamedAttribute> fields{
      integer("parameters", parameters),
      integer("gradients", gradients),
      integer("slots", slots),
      integer("masters", masters),
      integer("model_state", modelState),
      integer("persistent", persistent),
      integer("peak_transient", peakTransient),
      integer("peak_gathered", peakGathered),
      builder.getNamedAttr("traffic", trafficAttr(builder, traffic))};
  if (!axes.empty()) {
    SmallVector<Attribute> axisAttrs;
    for (const Axis &axis : axes)
      axisAttrs.push_back(builder.getDictionaryAttr(
          {integer("ranks", axis.ranks),
           builder.getNamedAttr("traffic",
                                trafficAttr(builder, axis.traffic))}));
    fields.push_back(
        builder.getNamedAttr("axes", builder.getArrayAttr(axisAttrs)));
  }
  if (acrossNodesBytes)
    fields.push_back(integer("across_nodes_bytes", *acrossNodesBytes));
  if (acrossNodesBytesUnquantized)
    fields.push_back(integer("across_nodes_bytes_unquantized",
                             *acrossNodesBytesUnquantized));
  return builder.getDictionaryAttr(fields);
}

static int64_t integerOf(DictionaryAttr dict, StringRef name) {
  auto value = dict ? dict.getAs<IntegerAttr>(name) : nullptr;
  return value ? value.getInt() : 0;
}

static TrafficByKind trafficFromAttr(DictionaryAttr dict) {
  TrafficByKind traffic;
  auto kinds = dict ? dict.getAs<DictionaryAttr>("traffic") : nullptr;
  for (NamedAttribute kind :
       kinds ? kinds.getValue() : ArrayRef<NamedAttribute>()) {
    auto entry = dyn_cast<DictionaryAttr>(kind.getValue());
    TrafficCount &figures = traffic[kind.getName().str()];
    figures.count = integerOf(entry, "count");
    figures.bytes = integerOf(entry, "bytes");
    if (auto sent =
            entry ? entry.getAs<FloatAttr>("sent_bytes_per_rank") : nullptr)
      figures.sentBytesPerRank = sent.getValueAsDouble();
  }
  return traffic;
}

ProgramReport ProgramReport::fromAttr(DictionaryAttr dict) {
  ProgramReport report;
  report.parameters = integerOf(dict, "parameters");
  report.gradients = integerOf(dict, "gradients");
  report.slots = integerOf(dict, "slots");
  report.masters = integerOf(dict, "masters");
  report.modelState = integerOf(dict, "model_state");
  report.persistent = integerOf(dict, "persistent");
  report.peakTransient = integerOf(dict, "peak_transient");
  report.peakGathered = integerOf(dict, "peak_gathered");
  report.traffic = trafficFromAttr(dict);
  if (auto axes = dict ? dict.getAs<ArrayAttr>("axes") : nullptr)
    for (Attribute axis : axes) {
      auto entry = dyn_cast<DictionaryAttr>(axis);
      report.axes.push_back(
          {integerOf(entry, "ranks"), trafficFromAttr(entry)});
    }
  if (dict && dict.get("across_nodes_bytes"))
    report.acrossNodesBytes = integerOf(dict, "across_nodes_bytes");
  if (dict && dict.get("across_nodes_bytes_unquantized"))
    report.acrossNodesBytesUnquantized =
        integerOf(dict, "across_nodes_bytes_unquantized");
  return report;
}

static llvm::json::Object trafficJson(const TrafficByKind &traffic) {
  llvm::json::Object kinds;
  for (const auto &[kind, figures] : traffic)
    kinds[kind] =
        llvm::json::Object{{"count", figures.count},
                           {"bytes", figures.bytes},
                           {"sent_bytes_per_rank", figures.sentBytesPerRank}};
  return kinds;
}

llvm::json::Object ProgramReport::toJson() const {
  llvm::json::Object object{{"parameters", parameters},
                            {"gradients", gradients},
                            {"slots", slots},
                            {"masters", masters},
                            {"model_state", modelState},
                            {"persistent", persistent},
                            {"peak_transient", peakTransient},
                            {"peak_gathered", peakGathered},
                            {"traffic", trafficJson(traffic)}};
  if (!axes.empty()) {
    llvm::json::Array axisArray;
    for (const Axis &axis : axes)
      axisArray.push_back(llvm::json::Object{
          {"ranks", axis.ranks}, {"traffic", trafficJson(axis.traffic)}});
    object["axes"] = std::move(axisArray);
  }
  if (acrossNodesBytes)
    object["across_nodes_bytes"] = *acrossNodesBytes;
  if (acrossNodesBytesUnquantized)
    object["across_nodes_bytes_unquantized"] = *acrossNodesBytesUnquantized;
  return object;
}

bool ProgramReport::operator==(const ProgramReport &other) const {
  return parameters == other.parameters && gradients == other.gradients &&
         slots == other.slots && masters == other.masters &&
         modelState == other.modelState && persistent == other.persistent &&
         peakTransient == other.peakTransient &&
         peakGathered == other.peakGathered && traffic == other.traffic &&
         axes == other.axes && acrossNodesBytes == other.acrossNodesBytes &&
         acrossNodesBytesUnquantized == other.acrossNodesBytesUnquantized;
}
