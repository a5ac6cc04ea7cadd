//===- DistDialect.cpp - Placements, SBP and collectives ------------------===//

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/dist/DistSbpParsing.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace zero::dist;

#include "zero/dialects/dist/DistDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "zero/dialects/dist/DistAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "zero/dialects/dist/DistTypes.cpp.inc"

void DistDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "zero/dialects/dist/DistOps.cpp.inc"
      >();
}

void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "zero/dialects/dist/DistAttrs.cpp.inc"
      >();
}

void DistDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "zero/dialects/dist/DistTypes.cpp.inc"
      >();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getPlacementAttrName()) {
    // A lowered program's own placement is the only one inside it; a
    // discardable one nested in it would silently change group sizes.
    for (Operation *scope = op; scope; scope = scope->getParentOp())
      if (scope->getAttrOfType<PlacementAttr>("placement"))
        return op->emitError()
               << "'" << getPlacementAttrName() << "' cannot be set inside '"
               << scope->getName() << "', which has its own placement";
    if (!isa<PlacementAttr>(attr.getValue()))
      return op->emitError()
             << "'" << getPlacementAttrName()
             << "' must be a #dist.placement, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == getZeroStageAttrName()) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || stage.getInt() < 0 || stage.getInt() > 3)
      return op->emitError()
             << "'" << getZeroStageAttrName()
             << "' must be an integer ZeRO stage 0-3, got " << attr.getValue();
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << getZeroStageAttrName()
             << "' belongs on the module, not on '" << op->getName() << "'";
    return success();
  }
  if (attr.getName() == getMeshSchemeAttrName()) {
    auto scheme = dyn_cast<StringAttr>(attr.getValue());
    if (!scheme ||
        !llvm::is_contained({"hybrid", "full", "hpz"}, scheme.getValue()))
      return op->emitError()
             << "'" << getMeshSchemeAttrName()
             << "' must be \"hybrid\", \"full\" or \"hpz\", got "
             << attr.getValue();
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << getMeshSchemeAttrName()
             << "' belongs on the module, not on '" << op->getName() << "'";
    return success();
  }
  if (attr.getName() == getQuantizationAttrName()) {
    auto entries = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!entries || !entries.getAs<IntegerAttr>("block") ||
        !entries.getAs<ArrayAttr>("full_precision"))
      return op->emitError()
             << "'" << getQuantizationAttrName()
             << "' must be a dictionary with 'block' and 'full_precision', "
                "got "
             << attr.getValue();
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << getQuantizationAttrName()
             << "' belongs on the module, not on '" << op->getName() << "'";
    return success();
  }
  if (attr.getName() == getReduceTypeAttrName()) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    if (!type || !type.getValue().isF32())
      return op->emitError()
             << "'" << getReduceTypeAttrName()
             << "' must be f32 (16-bit gradients averaged in f32), got "
             << attr.getValue();
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << getReduceTypeAttrName()
             << "' belongs on the module, not on '" << op->getName() << "'";
    return success();
  }
  if (attr.getName() == getTensorParallelAxisAttrName()) {
    auto axis = dyn_cast<IntegerAttr>(attr.getValue());
    if (!axis || axis.getInt() < 0)
      return op->emitError()
             << "'" << getTensorParallelAxisAttrName()
             << "' must be a placement axis (an integer >= 0), got "
             << attr.getValue();
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << getTensorParallelAxisAttrName()
             << "' belongs on the module, not on '" << op->getName() << "'";
    return success();
  }
  if (attr.getName() == getSbpAttrName()) {
    // The tensor-parallel plan of a parameter, consumed by
    // dist-tensor-parallel.
    auto sbp = dyn_cast<SbpAttr>(attr.getValue());
    if (op->getName().getStringRef() != "train.param")
      return op->emitError()
             << "'" << getSbpAttrName()
             << "' on an operation is a train.param's tensor-parallel plan; "
                "'"
             << op->getName() << "' cannot have one";
    if (!sbp || sbp.getDims().size() != 1 || sbp.getDims()[0].isPartial())
      return op->emitError()
             << "'" << getSbpAttrName()
             << "' of a parameter is its tensor-parallel plan, one entry: "
                "#dist.sbp<[S(d)]> or #dist.sbp<[B]>, got "
             << attr.getValue();
    return success();
  }
  return op->emitError() << "unknown dist attribute '"
                         << attr.getName().getValue()
                         << "'; the dialect defines '" << getPlacementAttrName()
                         << "', '" << getZeroStageAttrName() << "', '"
                         << getMeshSchemeAttrName() << "', '"
                         << getQuantizationAttrName() << "', '"
                         << getReduceTypeAttrName() << "', '"
                         << getTensorParallelAxisAttrName() << "' and '"
                         << getSbpAttrName() << "'";
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() != getSbpAttrName())
    return op->emitError() << "unknown dist argument attribute '"
                           << attr.getName().getValue()
                           << "'; the dialect defines only '"
                           << getSbpAttrName() << "'";
  auto sbp = dyn_cast<SbpAttr>(attr.getValue());
  if (!sbp)
    return op->emitError() << "argument " << argIndex << ": '"
                           << getSbpAttrName() << "' must be a #dist.sbp, got "
                           << attr.getValue();
  Region &region = op->getRegion(regionIndex);
  if (region.empty() || argIndex >= region.front().getNumArguments())
    return success();
  auto type = dyn_cast<RankedTensorType>(
      region.front().getArgument(argIndex).getType());
  for (const SbpDim &entry : sbp.getDims())
    if (entry.isSplit() && (!type || entry.dim >= type.getRank()))
      return op->emitError()
             << "argument " << argIndex << " is split along dimension "
             << entry.dim << ", but it is "
             << region.front().getArgument(argIndex).getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Placement lookup
//===----------------------------------------------------------------------===//

PlacementAttr zero::dist::lookupPlacement(Operation *op) {
  for (; op; op = op->getParentOp()) {
    if (auto placement = op->getAttrOfType<PlacementAttr>(
            DistDialect::getPlacementAttrName()))
      return placement;
    // Lowered programs (zrt.program) carry their placement as an inherent
    // attribute.
    if (auto placement = op->getAttrOfType<PlacementAttr>("placement"))
      return placement;
  }
  return {};
}

int64_t zero::dist::getGroupSize(Operation *op, int64_t axis) {
  PlacementAttr placement = lookupPlacement(op);
  if (!placement || !placement.hasAxis(axis))
    return 0;
  return placement.getGroupSize(axis);
}

FailureOr<int64_t> zero::dist::verifyGroupSize(Operation *op, int64_t axis) {
  PlacementAttr placement = lookupPlacement(op);
  if (!placement)
    return op->emitOpError()
           << "has no placement: attach a 'dist.placement' attribute such as "
              "#dist.placement<cpu, [4]> to the enclosing function or module";
  if (!placement.hasAxis(axis))
    return op->emitOpError()
           << "runs over placement axis " << axis << ", but " << placement
           << " has only " << placement.getNumAxes() << " axis(es)";
  return placement.getGroupSize(axis);
}

//===----------------------------------------------------------------------===//
// PlacementAttr
//===----------------------------------------------------------------------===//

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError, DeviceKind,
                      ArrayRef<int64_t> grid) {
  if (grid.empty())
    return emitError() << "a placement needs at least one axis, e.g. [4]";
  for (auto [axis, extent] : llvm::enumerate(grid))
    if (extent < 1)
      return emitError() << "placement axis " << axis << " has " << extent
                         << " ranks; every axis needs at least 1";
  return success();
}

int64_t PlacementAttr::getNumRanks() const {
  int64_t ranks = 1;
  for (int64_t extent : getGrid())
    ranks *= extent;
  return ranks;
}

//===----------------------------------------------------------------------===//
// SbpAttr
//===----------------------------------------------------------------------===//

ParseResult zero::dist::parseSbpDims(AsmParser &parser,
                                     SmallVectorImpl<SbpDim> &dims) {
  // The assembly parser only gathers the tokens of one entry (`S(0)`, `B`,
  // `P(sum)`); parseSbpDim owns the grammar's meaning and its messages.
  auto parseEntry = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef head;
    if (parser.parseKeyword(&head))
      return failure();
    std::string text = head.str();
    if (succeeded(parser.parseOptionalLParen())) {
      int64_t dim;
      StringRef word;
      OptionalParseResult integer = parser.parseOptionalInteger(dim);
      if (integer.has_value()) {
        if (failed(*integer))
          return failure();
        text += "(" + std::to_string(dim) + ")";
      } else {
        if (parser.parseKeyword(&word))
          return failure();
        text += "(" + word.str() + ")";
      }
      if (parser.parseRParen())
        return failure();
    }
    std::string error;
    std::optional<SbpDim> entry = parseSbpDim(text, &error);
    if (!entry)
      return parser.emitError(loc, error);
    dims.push_back(*entry);
    return success();
  };
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                        parseEntry, " in SBP list");
}

void zero::dist::printSbpDims(AsmPrinter &printer, ArrayRef<SbpDim> dims) {
  printer << formatSbpList(dims);
}

Attribute SbpAttr::parse(AsmParser &parser, Type) {
  SmallVector<SbpDim> dims;
  if (parser.parseLess() || parseSbpDims(parser, dims) || parser.parseGreater())
    return {};
  return SbpAttr::get(parser.getContext(), dims);
}

void SbpAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printSbpDims(printer, getDims());
  printer << ">";
}

bool SbpAttr::isFullyBroadcast() const {
  return llvm::all_of(getDims(),
                      [](const SbpDim &dim) { return dim.isBroadcast(); });
}

int64_t SbpAttr::getSplitFactor(int64_t dim, PlacementAttr placement) const {
  int64_t factor = 1;
  for (auto [axis, sbp] : llvm::enumerate(getDims()))
    if (sbp.isSplit() && sbp.dim == dim && placement.hasAxis(axis))
      factor *= placement.getGroupSize(axis);
  return factor;
}
