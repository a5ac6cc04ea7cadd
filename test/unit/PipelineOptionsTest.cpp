//===- PipelineOptionsTest.cpp - The ZeRO options' choices and rules ------===//
//
// Every choice of an enum-valued option is spelled one way: what
// stringify* writes is what the pass options parse and print (Passes.td's
// clEnumValN lists and OptionEnums.td agree). And the options' rules,
// which every front end checks through findZeroOptionsError, word each
// refusal in the front end's own terms.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/PipelineOptions.h"

#include "gtest/gtest.h"

#include <string>

using namespace zero;

namespace {

/// The textual pipeline zero-pipeline prints after parsing `options`.
std::string parsedAndPrinted(llvm::StringRef options) {
  std::unique_ptr<mlir::Pass> pass = createZeroPipeline();
  std::string error;
  auto onError = [&](const llvm::Twine &message) {
    error = message.str();
    return mlir::failure();
  };
  if (mlir::failed(pass->initializeOptions(options, onError)))
    return "error: " + error;
  std::string text;
  llvm::raw_string_ostream os(text);
  pass->printAsTextualPipeline(os);
  return text;
}

TEST(PipelineOptions, EveryChoiceParsesAndPrintsByItsName) {
  for (uint32_t i = 0;
       std::optional<MeshScheme> scheme = symbolizeMeshScheme(i); ++i) {
    std::string option = ("mesh-scheme=" + stringifyMeshScheme(*scheme)).str();
    EXPECT_NE(parsedAndPrinted(option).find(option), std::string::npos)
        << option;
  }
  for (uint32_t i = 0;
       std::optional<OffloadPlacement> what = symbolizeOffloadPlacement(i);
       ++i) {
    std::string option = ("offload=" + stringifyOffloadPlacement(*what)).str();
    EXPECT_NE(parsedAndPrinted(option).find(option), std::string::npos)
        << option;
  }
  for (uint32_t i = 0;
       std::optional<ReportFormat> format = symbolizeReportFormat(i); ++i) {
    std::string option = ("report=" + stringifyReportFormat(*format)).str();
    EXPECT_NE(parsedAndPrinted(option).find(option), std::string::npos)
        << option;
  }
  for (llvm::StringRef layout : {"flat", "dim0"}) {
    std::string option = ("layout=" + layout).str();
    EXPECT_NE(parsedAndPrinted(option).find(option), std::string::npos)
        << option;
  }
}

TEST(PipelineOptions, AnUnknownChoiceIsRefusedWithTheChoices) {
  // The parser writes its message to stderr; the handler gets the failure.
  EXPECT_EQ(parsedAndPrinted("offload=gpu").rfind("error: ", 0), 0u);
  EXPECT_EQ(parsedAndPrinted("layout=replicated").rfind("error: ", 0), 0u);
  EXPECT_EQ(parsedAndPrinted("mesh-scheme=diagonal").rfind("error: ", 0), 0u);
}

TEST(PipelineOptions, ValidOptionsBreakNoRule) {
  ZeroPipelineOptions options;
  EXPECT_EQ(findZeroOptionsError(options, false, OptionSpelling::builder()),
            std::nullopt);
  options.stage = 3;
  options.meshScheme = MeshScheme::full;
  options.hpz = options.qwz = options.qgz = true;
  EXPECT_EQ(findZeroOptionsError(options, true, OptionSpelling::commandLine()),
            std::nullopt);
}

TEST(PipelineOptions, EachRuleIsWordedForItsFrontEnd) {
  ZeroPipelineOptions hpzAtStage2;
  hpzAtStage2.stage = 2;
  hpzAtStage2.meshScheme = MeshScheme::full;
  hpzAtStage2.hpz = true;
  EXPECT_EQ(
      findZeroOptionsError(hpzAtStage2, true, OptionSpelling::commandLine()),
      "--hpz keeps a secondary shard of the parameters within the node; "
      "it needs --stage 3 --mesh-scheme full");
  EXPECT_EQ(findZeroOptionsError(hpzAtStage2, true, OptionSpelling::builder()),
            "hpz keeps a secondary shard of the parameters within the node; "
            "it needs enable_zero(true, 3) and mesh scheme full");
  EXPECT_EQ(
      findZeroOptionsError(hpzAtStage2, true, OptionSpelling::passOptions()),
      "hpz keeps a secondary shard of the parameters within the node; it "
      "needs stage=3 and mesh-scheme=full");

  ZeroPipelineOptions noMesh;
  noMesh.stage = 3;
  noMesh.qgz = true;
  EXPECT_EQ(findZeroOptionsError(noMesh, false, OptionSpelling::commandLine()),
            "--mesh-scheme, --hpz, --qwz and --qgz say how a mesh is sharded; "
            "give --mesh RxS");
  EXPECT_EQ(findZeroOptionsError(noMesh, true, OptionSpelling::builder()),
            "qwz and qgz quantize what crosses nodes under full 2-D sharding; "
            "they need mesh scheme full");

  ZeroPipelineOptions qwzAtStage2;
  qwzAtStage2.stage = 2;
  qwzAtStage2.meshScheme = MeshScheme::full;
  qwzAtStage2.qwz = true;
  EXPECT_EQ(findZeroOptionsError(qwzAtStage2, true, OptionSpelling::builder()),
            "qwz quantizes the gathers of sharded parameters; it needs "
            "enable_zero(true, 3)");

  ZeroPipelineOptions bits;
  bits.stage = 3;
  bits.meshScheme = MeshScheme::full;
  bits.qgz = true;
  bits.qgzBits = 3;
  EXPECT_EQ(findZeroOptionsError(bits, true, OptionSpelling::builder()),
            "qgz bits must be 8 (int8) or 4 (int4), got 3");

  ZeroPipelineOptions block;
  block.quantizeBlock = 0;
  EXPECT_EQ(findZeroOptionsError(block, false, OptionSpelling::passOptions()),
            "quantize-block must be positive and quantize-min-elements not "
            "negative, got 0 and 4096");

  ZeroPipelineOptions stage;
  stage.stage = 4;
  EXPECT_EQ(findZeroOptionsError(stage, false, OptionSpelling::builder()),
            "stage must be 0, 1, 2 or 3, got 4");

  ZeroPipelineOptions negative;
  negative.prefetchBytes = -1;
  EXPECT_EQ(
      findZeroOptionsError(negative, false, OptionSpelling::commandLine()),
      "--prefetch-bytes must not be negative, got -1");
}

} // namespace
