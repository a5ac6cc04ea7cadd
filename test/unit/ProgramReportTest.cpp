//===- ProgramReportTest.cpp - zrt.report through its two forms -----------===//
//
// The report a lowered program carries is one type: what the lowering
// writes as an attribute is what the frontends read back, field for field,
// and its JSON form has the attribute's keys and values.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/ProgramReport.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace zero;

namespace {

/// A collective kind's figures as the program carries them.
TrafficCount traffic(int64_t count, int64_t bytes, double sentBytesPerRank) {
  TrafficCount figures;
  figures.count = count;
  figures.bytes = bytes;
  figures.sentBytesPerRank = sentBytesPerRank;
  return figures;
}

ProgramReport meshReport() {
  ProgramReport report;
  report.parameters = 1000;
  report.gradients = 250;
  report.slots = 2000;
  report.masters = 3;
  report.modelState = 3253;
  report.persistent = 4000;
  report.peakTransient = 5000;
  report.peakGathered = 600;
  report.traffic["all_gather"] = traffic(5, 930048, 465024.0);
  report.traffic["reduce_scatter"] = traffic(1, 470016, 235008.5);
  report.axes.push_back({2, {{"all_reduce", traffic(2, 235012, 235012.0)}}});
  report.axes.push_back({2, report.traffic});
  report.acrossNodesBytes = 123;
  report.acrossNodesBytesUnquantized = 456;
  return report;
}

TEST(ProgramReport, RoundTripsThroughTheAttribute) {
  MLIRContext context;
  for (const ProgramReport &report : {meshReport(), ProgramReport()}) {
    DictionaryAttr attr = report.toAttr(&context);
    EXPECT_EQ(ProgramReport::fromAttr(attr), report);
  }
  // A field the attribute lacks reads 0; the optional ones stay absent.
  ProgramReport empty = ProgramReport::fromAttr(DictionaryAttr());
  EXPECT_EQ(empty, ProgramReport());
  EXPECT_FALSE(empty.acrossNodesBytes);
}

TEST(ProgramReport, JsonHasTheAttributesKeysAndValues) {
  MLIRContext context;
  ProgramReport report = meshReport();
  llvm::json::Object json = report.toJson();
  DictionaryAttr attr = report.toAttr(&context);
  // Every key of the attribute, and no other.
  size_t keys = 0;
  for (NamedAttribute entry : attr) {
    ++keys;
    EXPECT_TRUE(json.get(entry.getName().strref())) << entry.getName().str();
  }
  EXPECT_EQ(json.size(), keys);
  EXPECT_EQ(json.getInteger("model_state"), 3253);
  EXPECT_EQ(json.getInteger("across_nodes_bytes"), 123);
  const llvm::json::Object *gather =
      json.getObject("traffic")->getObject("all_gather");
  ASSERT_TRUE(gather);
  EXPECT_EQ(gather->getInteger("bytes"), 930048);
  EXPECT_EQ(gather->getNumber("sent_bytes_per_rank"), 465024.0);
  const llvm::json::Array *axes = json.getArray("axes");
  ASSERT_TRUE(axes && axes->size() == 2);
  EXPECT_EQ((*axes)[0].getAsObject()->getInteger("ranks"), 2);
  EXPECT_EQ((*axes)[0]
                .getAsObject()
                ->getObject("traffic")
                ->getObject("all_reduce")
                ->getInteger("count"),
            2);
}

} // namespace
