// The backend contract (backends/backend.h "memory and execution") held by the layers above it:
// the model, its heads, the trainer, QAT, calibration and the int8 path run on the checked
// backend (backends/checked/: its own memory only, ops deferred until sync) and must give the
// cpu backend's results bit for bit. A host touch of backend memory between ops, an op argument
// that is not backend memory, or a host read before sync() breaks that equality or throws.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/checked/checked_backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/device_array.h"
#include "core/error.h"
#include "model/bert_model.h"
#include "model_runs.h"
#include "train/trainer.h"

namespace bertrt {
namespace {

using test::Batch;
using test::expect_same;
using test::heads_of;
using test::make_batch;
using test::Mode;
using test::Outcome;
using test::run_model;
using test::tiny_config;

class Contract : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(Contract, CheckedBackendEqualsCpuBitForBit) {
  const auto [kind, mode] = GetParam();
  CpuBackend cpu(1);
  CheckedBackend checked(std::make_unique<CpuBackend>(1), /*max_batch=*/7);
  const Outcome want = run_model(cpu, kind, mode);
  const Outcome got = run_model(checked, kind, mode);
  expect_same(want, got);
  // The checked backend really deferred and submitted in bounded batches.
  EXPECT_GT(checked.stats().submits, checked.stats().syncs);
  EXPECT_GE(checked.stats().submits * 7, checked.stats().ops);
}

std::string mode_name(Mode m) {
  return m == Mode::kFloat ? "fp32" : m == Mode::kQat ? "qat" : "int8";
}

INSTANTIATE_TEST_SUITE_P(
    Heads, Contract,
    ::testing::Combine(::testing::Values("pretraining", "sequence", "regression", "token", "span"),
                       ::testing::Values(Mode::kFloat, Mode::kQat, Mode::kInt8)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + mode_name(std::get<1>(info.param));
    });

// A training step's host round trips: the forward's read-back and the clipping norm, in fp32 and
// in QAT (its observers update on the backend: observe_min_max, fake_quant_observed).
class ContractSyncs : public ::testing::TestWithParam<bool> {};

TEST_P(ContractSyncs, TrainingStepSyncsTwice) {
  const BertConfig c = tiny_config();
  BertModel m(c, heads_of("pretraining"));
  m.init_weights(3);
  if (GetParam()) m.enable_qat(QatConfig{});
  CheckedBackend be(std::make_unique<CpuBackend>(1));
  OptimOptions o;
  o.total_steps = 2;
  Trainer trainer(m, be, o);
  const Batch b = make_batch(c, 5);
  trainer.step(b.inputs(), b.targets());
  const int64_t before = be.stats().syncs;
  trainer.step(b.inputs(), b.targets());
  EXPECT_EQ(be.stats().syncs - before, 2);
}

INSTANTIATE_TEST_SUITE_P(Contract, ContractSyncs, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "qat" : "fp32"; });

TEST(Contract, HostMemoryPassedToAnOpIsAnErrorNamingOpAndArgument) {
  CheckedBackend be(std::make_unique<CpuBackend>(1));
  DeviceArray<float> x(be, 8);
  std::vector<float> host(8);
  try {
    be.add(x.data(), x.data(), host.data(), 8);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("add: argument 'b'"), std::string::npos) << msg;
  }
  // One element past the block is outside it too.
  EXPECT_THROW(be.fill(x.data() + 1, 0.0f, 8), Error);
  be.fill(x.data(), 1.0f, 8);  // in bounds
}

TEST(Contract, ResultsReachTheHostOnlyAtSync) {
  CheckedBackend be(std::make_unique<CpuBackend>(1));
  DeviceArray<float> x(be, 4);
  be.fill(x.data(), 2.5f, 4);
  float got[4] = {0, 0, 0, 0};
  be.download(got, x.data(), sizeof got);
  EXPECT_EQ(got[0], 0.0f);  // recorded, not run
  be.sync();
  for (float v : got) EXPECT_EQ(v, 2.5f);
}

// Memory of a backend that is gone is gone: arrays forget it, and data left there is an error.
TEST(Contract, ArraysOutlivingTheirBackendForgetItsMemory) {
  HostDeviceBuffer params;
  params.assign(16, 1.0f);
  DeviceArray<float> scratch;
  {
    CheckedBackend be(std::make_unique<CpuBackend>(1));
    scratch.ensure(be, 32);
    be.scale(params.on(be), 2.0f, 16);
  }
  EXPECT_FALSE(scratch.alive());
  EXPECT_THROW(params.host(), Error);
}

}  // namespace
}  // namespace bertrt
