//===- SbpTest.cpp - Split / broadcast / partial parsing ------------------===//

#include "zero/support/Sbp.h"

#include "gtest/gtest.h"

using namespace zero::dist;

TEST(Sbp, ParsesBroadcast) {
  std::optional<SbpDim> sbp = parseSbpDim("B");
  ASSERT_TRUE(sbp.has_value());
  EXPECT_TRUE(sbp->isBroadcast());
}

TEST(Sbp, ParsesSplitWithDimension) {
  std::optional<SbpDim> sbp = parseSbpDim("S(2)");
  ASSERT_TRUE(sbp.has_value());
  EXPECT_TRUE(sbp->isSplit());
  EXPECT_EQ(sbp->dim, 2);
}

TEST(Sbp, ParsesEveryPartialReduction) {
  for (auto [text, kind] : {std::pair{"P(sum)", ReduceKind::sum},
                            std::pair{"P(mean)", ReduceKind::mean},
                            std::pair{"P(max)", ReduceKind::max}}) {
    std::optional<SbpDim> sbp = parseSbpDim(text);
    ASSERT_TRUE(sbp.has_value()) << text;
    EXPECT_TRUE(sbp->isPartial());
    EXPECT_EQ(sbp->reduce, kind);
  }
}

TEST(Sbp, AcceptsWhitespace) {
  std::optional<SbpDim> sbp = parseSbpDim("  S ( 1 ) ");
  ASSERT_TRUE(sbp.has_value());
  EXPECT_EQ(*sbp, SbpDim::split(1));
}

TEST(Sbp, RejectsUnknownKindWithMessage) {
  std::string error;
  EXPECT_FALSE(parseSbpDim("X(0)", &error).has_value());
  EXPECT_NE(error.find("expected S(dim), B or P"), std::string::npos) << error;
}

TEST(Sbp, RejectsNegativeSplitDimension) {
  std::string error;
  EXPECT_FALSE(parseSbpDim("S(-1)", &error).has_value());
  EXPECT_NE(error.find("non-negative"), std::string::npos) << error;
}

TEST(Sbp, RejectsUnknownReduction) {
  std::string error;
  EXPECT_FALSE(parseSbpDim("P(min)", &error).has_value());
  EXPECT_NE(error.find("sum, mean or max"), std::string::npos) << error;
}

TEST(Sbp, RejectsMissingParentheses) {
  EXPECT_FALSE(parseSbpDim("S0").has_value());
  EXPECT_FALSE(parseSbpDim("P(sum").has_value());
}

TEST(Sbp, ParsesListOnePerAxis) {
  auto list = parseSbpList("[S(0), B, P(mean)]");
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0], SbpDim::split(0));
  EXPECT_EQ((*list)[1], SbpDim::broadcast());
  EXPECT_EQ((*list)[2], SbpDim::partial(ReduceKind::mean));
}

TEST(Sbp, ListNeedsBrackets) {
  std::string error;
  EXPECT_FALSE(parseSbpList("S(0), B", &error).has_value());
  EXPECT_NE(error.find("bracketed"), std::string::npos);
}

TEST(Sbp, FormatRoundTrips) {
  for (const char *text :
       {"[S(0), B]", "[P(sum)]", "[B, P(max), S(3)]", "[]"}) {
    auto list = parseSbpList(text);
    ASSERT_TRUE(list.has_value()) << text;
    EXPECT_EQ(formatSbpList(*list), text);
  }
}

TEST(Sbp, EqualityAndHashSeeEveryField) {
  EXPECT_NE(SbpDim::split(0), SbpDim::split(1));
  EXPECT_NE(SbpDim::partial(ReduceKind::sum), SbpDim::partial(ReduceKind::max));
  EXPECT_EQ(hash_value(SbpDim::split(1)), hash_value(SbpDim::split(1)));
  EXPECT_NE(hash_value(SbpDim::split(0)), hash_value(SbpDim::split(1)));
}
