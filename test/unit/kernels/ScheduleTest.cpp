//===- ScheduleTest.cpp - Learning-rate schedules of the update kernels ---===//
//
// scheduledLearningRate against values worked out by hand at the steps
// where the schedule changes shape (the first step, the end of the warmup,
// the step after it, the middle of the decay, its end and beyond), then the
// update kernels: the schedule params scale the step's update by lr(t) /
// lr, and an update without them is bitwise what it always was.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

// Peak 1.0, floor 0.1, warmup 10 steps, decay until step 110: the decay
// spans 100 steps, so step 11 is 1% of the way and step 60 halfway.
constexpr double kPeak = 1.0, kFloor = 0.1;
constexpr int64_t kWarmup = 10, kTotal = 110;

TEST(ScheduleTest, CosineWithWarmup) {
  LrSchedule cosine{LrSchedule::Kind::cosine, kWarmup, kTotal, kFloor};
  auto at = [&](int64_t t) { return scheduledLearningRate(cosine, kPeak, t); };
  EXPECT_DOUBLE_EQ(at(1), 0.1);  // lr * 1 / 10: warmup starts from 0
  EXPECT_DOUBLE_EQ(at(5), 0.5);  // lr * 5 / 10
  EXPECT_DOUBLE_EQ(at(10), 1.0); // the peak at the end of the warmup
  // 0.1 + 0.9 * (1 + cos(pi / 100)) / 2
  EXPECT_NEAR(at(11), 0.9997779521645792, 1e-15);
  EXPECT_NEAR(at(60), 0.55, 1e-15); // halfway: (lr + min_lr) / 2
  EXPECT_DOUBLE_EQ(at(110), 0.1);   // min_lr at total
  EXPECT_DOUBLE_EQ(at(115), 0.1);   // and after it
}

TEST(ScheduleTest, LinearWithWarmup) {
  LrSchedule linear{LrSchedule::Kind::linear, kWarmup, kTotal, kFloor};
  auto at = [&](int64_t t) { return scheduledLearningRate(linear, kPeak, t); };
  EXPECT_DOUBLE_EQ(at(1), 0.1);
  EXPECT_DOUBLE_EQ(at(10), 1.0);
  EXPECT_NEAR(at(11), 0.991, 1e-15); // 0.1 + 0.9 * 0.99
  EXPECT_NEAR(at(60), 0.55, 1e-15);
  EXPECT_DOUBLE_EQ(at(110), 0.1);
  EXPECT_DOUBLE_EQ(at(115), 0.1);
}

TEST(ScheduleTest, ConstantWithWarmup) {
  LrSchedule constant{LrSchedule::Kind::constant, kWarmup, 0, 0.0};
  auto at = [&](int64_t t) {
    return scheduledLearningRate(constant, kPeak, t);
  };
  EXPECT_DOUBLE_EQ(at(1), 0.1);
  EXPECT_DOUBLE_EQ(at(10), 1.0);
  EXPECT_DOUBLE_EQ(at(11), 1.0);
  EXPECT_DOUBLE_EQ(at(60), 1.0);
  EXPECT_DOUBLE_EQ(at(115), 1.0);
}

TEST(ScheduleTest, DecayWithoutWarmupStartsBelowThePeak) {
  // Step 1 is already 1/100 of the way: 1e-3 * (1 + cos(pi / 100)) / 2.
  LrSchedule cosine{LrSchedule::Kind::cosine, 0, 100, 0.0};
  EXPECT_NEAR(scheduledLearningRate(cosine, 1e-3, 1), 0.0009997532801828658,
              1e-18);
  EXPECT_NEAR(scheduledLearningRate(cosine, 1e-3, 50), 0.5e-3, 1e-18);
  EXPECT_DOUBLE_EQ(scheduledLearningRate(cosine, 1e-3, 100), 0.0);
}

const std::vector<int64_t> kShape = {3, 250}; // Spans two blocks.

mlir::DictionaryAttr params(double lr, bool scheduled) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"lr", f64(lr)},    {"beta1", f64(0.9)},        {"beta2", f64(0.95)},
      {"eps", f64(1e-8)}, {"weight_decay", f64(0.1)}, {"momentum", f64(0.8)}};
  if (scheduled) {
    entries.push_back(
        {"schedule", mlir::StringAttr::get(&context(), "cosine")});
    entries.push_back({"warmup", i64(kWarmup)});
    entries.push_back({"total", i64(kTotal)});
    entries.push_back({"min_lr", f64(kFloor * lr)});
  }
  return dict(entries);
}

/// One update of `kernel` at runtime step `step`; returns the new param.
Tensor update(absl::string_view kernel, mlir::DictionaryAttr hyper,
              int64_t step) {
  Tensor param = randomTensor(DType::f32, kShape, 7);
  Tensor grad = randomTensor(DType::f32, kShape, 8);
  Tensor state = randomTensor(DType::f32, kShape, 9, 0.0, 1.0);
  Tensor state2 = randomTensor(DType::f32, kShape, 10, 0.0, 1.0);
  Tensor t = fromValues(DType::i64, {}, {static_cast<double>(step)});
  Tensor next(DType::f32, kShape), next1(DType::f32, kShape),
      next2(DType::f32, kShape);
  KernelContext ctx;
  ctx.step = step;
  absl::Status status;
  if (kernel == "train.sgd")
    status = runKernel(kernel, hyper, {&param, &grad}, {&next}, ctx);
  else if (kernel == "train.sgd_momentum")
    status =
        runKernel(kernel, hyper, {&param, &grad, &state}, {&next, &next1}, ctx);
  else
    status = runKernel(kernel, hyper, {&param, &grad, &state, &state2, &t},
                       {&next, &next1, &next2}, ctx);
  EXPECT_TRUE(status.ok()) << status;
  return next;
}

TEST(ScheduleTest, KernelsApplyTheStepsRate) {
  // The scheduled update at step t is the unscheduled one with lr(t) as
  // its rate; the cases are the warmup (lr / 10 at step 1), the peak, the
  // decay and the floor.
  for (const char *kernel :
       {"train.sgd", "train.sgd_momentum", "train.adam", "train.adamw"})
    for (int64_t step : {1, 10, 60, 115}) {
      SCOPED_TRACE(std::string(kernel) + " step " + std::to_string(step));
      double lr = 1e-2;
      LrSchedule schedule{LrSchedule::Kind::cosine, kWarmup, kTotal,
                          kFloor * lr};
      double lrAt = scheduledLearningRate(schedule, lr, step);
      Tensor scheduled = update(kernel, params(lr, true), step);
      Tensor constant = update(kernel, params(lrAt, false), step);
      EXPECT_TRUE(scheduled.sameBytes(constant));
    }
}

TEST(ScheduleTest, NoScheduleIsBitwiseUnchanged) {
  // Without schedule params the kernels read lr as they always have: the
  // same bits at every step, and the same as an explicit `constant`
  // schedule without warmup.
  for (const char *kernel :
       {"train.sgd", "train.sgd_momentum", "train.adam", "train.adamw"}) {
    SCOPED_TRACE(kernel);
    mlir::DictionaryAttr plain = params(3e-3, false);
    std::vector<std::pair<std::string, mlir::Attribute>> entries;
    for (mlir::NamedAttribute entry : plain)
      entries.push_back({entry.getName().str(), entry.getValue()});
    entries.push_back(
        {"schedule", mlir::StringAttr::get(&context(), "constant")});
    entries.push_back({"warmup", i64(0)});
    for (int64_t step : {1, 7, 1000})
      EXPECT_TRUE(update(kernel, plain, step)
                      .sameBytes(update(kernel, dict(entries), step)));
  }
}

TEST(ScheduleTest, RejectsBadScheduleParams) {
  Tensor param(DType::f32, {8}), grad(DType::f32, {8}), p1(DType::f32, {8});
  auto bind = [&](std::vector<std::pair<std::string, mlir::Attribute>> extra) {
    std::vector<std::pair<std::string, mlir::Attribute>> entries = {
        {"lr", f64(0.1)}};
    entries.insert(entries.end(), extra.begin(), extra.end());
    return bindKernel("train.sgd", dict(entries), {&param, &grad}, {&p1});
  };
  auto str = [](const char *s) { return mlir::StringAttr::get(&context(), s); };
  EXPECT_TRUE(bind({{"schedule", str("cosine")}, {"total", i64(10)}}).ok());
  // An unknown kind; a decay without its end; a decay ending in the
  // warmup; a negative warmup; schedule settings without a schedule.
  EXPECT_FALSE(bind({{"schedule", str("exponential")}}).ok());
  EXPECT_FALSE(bind({{"schedule", str("linear")}}).ok());
  EXPECT_FALSE(bind({{"schedule", str("linear")},
                     {"warmup", i64(10)},
                     {"total", i64(10)}})
                   .ok());
  EXPECT_FALSE(bind({{"schedule", str("constant")}, {"warmup", i64(-1)}}).ok());
  EXPECT_FALSE(bind({{"warmup", i64(10)}}).ok());
}

} // namespace
