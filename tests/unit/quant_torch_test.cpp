// The quantization numerics against PyTorch itself: tests/reference/quant_reference.py runs at
// test time (/usr/bin/python3 with torch) into a temporary folder and writes inputs and torch's
// outputs; every comparison here is BIT-EXACT, on both backends, because bertrt performs the same
// float32 operations in the same order as ATen's kernels and torch's observer code (see
// backends/backend.h and src/quant/qparams.h for the formulas and their sources):
//   - torch.fake_quantize_per_tensor_affine / _per_channel_affine forward and backward (the STE
//     mask), on exact .5 ties, the clamp boundaries, and values where x·(1/s) and x/s round apart;
//   - torch.quantize_per_tensor to quint8 (the int8 inference path's activation integers);
//   - per-channel symmetric weight scales, max|w| / 127 (zero rows: eps);
//   - FakeQuantize + MovingAverageMinMaxObserver over a sequence of batches with the observer
//     frozen part-way: running min/max, scale, zero point, output and gradient at every step;
//   - u8×s8 → int32 GEMMs, including all-255 × 127 (where vpmaddubsw would saturate).
// Skipped (visibly) when python3 or torch is missing, unless BERTRT_REQUIRE_DATA=1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "io/safetensors.h"
#include "op_test_util.h"
#include "quant/fake_quant.h"
#include "quant/observer.h"
#include "quant/qparams.h"
#include "quant_op_cases.h"
#include "test_util.h"

namespace bertrt {
namespace {

using test::all_close;
using test::all_equal;

class QuantTorch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string py = test::kPython;
    if (!test::have_torch()) {
      skip_reason_ = new std::string("python3 with torch is missing (" + py + ")");
      return;
    }
    dir_ = new test::TempDir();
    const std::string out = dir_->file("quant.safetensors");
    const std::string cmd = py + " " + test::source_dir() + "/tests/reference/quant_reference.py --out " +
                            out + " > " + dir_->file("log.txt") + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      skip_reason_ = new std::string("quant_reference.py failed: see " + cmd);
      return;
    }
    file_ = new SafetensorsFile(SafetensorsFile::open(out));
  }
  static void TearDownTestSuite() {
    delete file_;
    delete dir_;
    delete skip_reason_;
    file_ = nullptr;
    dir_ = nullptr;
    skip_reason_ = nullptr;
  }
  void SetUp() override {
    if (file_) return;
    const char* req = std::getenv("BERTRT_REQUIRE_DATA");
    if (req && std::string(req) == "1") FAIL() << *skip_reason_;
    GTEST_SKIP() << *skip_reason_;
  }

  static std::vector<float> f32(const std::string& name) { return file_->to_f32(name); }
  static std::vector<int64_t> i64(const std::string& name) { return file_->to_i64(name); }
  static bool has(const std::string& name) { return file_->find(name) != nullptr; }
  static int64_t dim(const std::string& name, size_t d) { return file_->at(name).shape.at(d); }

  // The backends under test.
  static std::vector<std::unique_ptr<Backend>> backends() {
    std::vector<std::unique_ptr<Backend>> v;
    v.push_back(std::make_unique<ReferenceBackend>());
    v.push_back(std::make_unique<CpuBackend>(2));
    return v;
  }

  static SafetensorsFile* file_;
  static test::TempDir* dir_;
  static std::string* skip_reason_;
};

SafetensorsFile* QuantTorch::file_ = nullptr;
test::TempDir* QuantTorch::dir_ = nullptr;
std::string* QuantTorch::skip_reason_ = nullptr;

template <class T>
std::vector<T> narrow(const std::vector<int64_t>& v) {
  return std::vector<T>(v.begin(), v.end());
}

TEST_F(QuantTorch, FakeQuantPerTensorForwardBackwardAndQuantize) {
  int cases = 0;
  for (int i = 0; has("pt" + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string p = "pt" + std::to_string(i) + ".";
    const auto x = f32(p + "x"), dy = f32(p + "dy"), want = f32(p + "out"), want_dx = f32(p + "dx");
    const float scale = f32(p + "scale")[0];
    const int zp = static_cast<int>(i64(p + "zero_point")[0]);
    const auto range = i64(p + "range");
    const int qmin = static_cast<int>(range[0]), qmax = static_cast<int>(range[1]);
    const size_t n = x.size();
    // The data must exercise what it claims: clamped values (mask 0) on both sides, and for a
    // non-power-of-two scale values where the reciprocal and the division round apart.
    size_t masked = 0, recip_vs_div = 0;
    for (size_t k = 0; k < n; ++k) {
      masked += want_dx[k] == 0.0f && dy[k] != 0.0f;
      recip_vs_div += std::nearbyint(x[k] * (1.0f / scale)) != std::nearbyint(x[k] / scale);
    }
    EXPECT_GT(masked, 4u) << p;
    if (std::fabs(std::log2(scale) - std::round(std::log2(scale))) > 1e-6) {
      EXPECT_GT(recip_vs_div, 0u) << p;
    }
    for (auto& be : backends()) {
      SCOPED_TRACE(std::string(be->name()) + " " + p);
      std::vector<float> out(n), dx(n, 0.0f);
      std::vector<uint8_t> mask(n);
      be->fake_quant_per_tensor(out.data(), mask.data(), x.data(), n, scale, zp, qmin, qmax);
      EXPECT_TRUE(all_close(want, out, {0.0}));
      be->fake_quant_backward(dx.data(), mask.data(), dy.data(), n);
      EXPECT_TRUE(all_close(want_dx, dx, {0.0}));
      if (has(p + "q")) {
        std::vector<uint8_t> q(n);
        be->quantize_u8(q.data(), x.data(), n, scale, zp);
        EXPECT_TRUE(all_equal(narrow<uint8_t>(i64(p + "q")), q));
      }
    }
  }
  EXPECT_GE(cases, 7);
}

TEST_F(QuantTorch, FakeQuantPerChannelScalesForwardBackward) {
  for (int i = 0; i < 2; ++i) {
    const std::string p = "pc" + std::to_string(i) + ".";
    const auto w = f32(p + "w"), dy = f32(p + "dy"), want = f32(p + "out"), want_dx = f32(p + "dx");
    const auto want_scale = f32(p + "scale");
    const int rows = static_cast<int>(dim(p + "w", 0)), cols = static_cast<int>(dim(p + "w", 1));
    const size_t n = w.size();
    for (auto& be : backends()) {
      SCOPED_TRACE(std::string(be->name()) + " " + p);
      std::vector<float> out(n), dx(n, 0.0f), scale(rows);
      std::vector<uint8_t> mask(n);
      if (i == 0) {  // scales from the current weights: the QAT weight path end to end
        fake_quant_weight(*be, out.data(), mask.data(), scale.data(), w.data(), rows, cols);
        EXPECT_TRUE(all_close(want_scale, scale, {0.0})) << "scales";
        EXPECT_EQ(scale[2], 1.1920929e-07f) << "an all-zero row gets eps";
      } else {  // given scales that clamp and tie
        be->fake_quant_per_row(out.data(), mask.data(), w.data(), want_scale.data(), rows, cols,
                               kWeightQMin, kWeightQMax);
      }
      EXPECT_TRUE(all_close(want, out, {0.0}));
      be->fake_quant_backward(dx.data(), mask.data(), dy.data(), n);
      EXPECT_TRUE(all_close(want_dx, dx, {0.0}));
    }
  }
}

TEST_F(QuantTorch, MovingAverageObserverSequenceWithFreeze) {
  for (int j = 0; j < 3; ++j) {
    const std::string p = "obs" + std::to_string(j) + ".";
    const auto batches = f32(p + "batches"), dys = f32(p + "dy"), outs = f32(p + "out"),
               dxs = f32(p + "dx"), mins = f32(p + "min"), maxs = f32(p + "max"),
               scales = f32(p + "scale");
    const auto zps = i64(p + "zero_point");
    const float momentum = f32(p + "momentum")[0];
    const int freeze = static_cast<int>(i64(p + "freeze")[0]);
    const int steps = static_cast<int>(dim(p + "batches", 0)), n = static_cast<int>(dim(p + "batches", 1));
    for (auto& be : backends()) {
      ActivationObserver obs(momentum);
      for (int t = 0; t < steps; ++t) {
        SCOPED_TRACE(std::string(be->name()) + " " + p + " step " + std::to_string(t));
        if (t == freeze) obs.set_frozen(true);
        const size_t off = static_cast<size_t>(t) * n;
        std::vector<float> x(batches.begin() + off, batches.begin() + off + n), out(n), dx(n, 0.0f);
        std::vector<uint8_t> mask(n);
        DeviceArray<float> ranges;
        fake_quant_activation(*be, obs, ranges, out.data(), mask.data(), x.data(), 1, n);
        const QParams qp = obs.qparams();  // the qparams the op used
        EXPECT_EQ(obs.min(), mins[t]);
        EXPECT_EQ(obs.max(), maxs[t]);
        EXPECT_EQ(qp.scale, scales[t]);
        EXPECT_EQ(qp.zero_point, zps[t]);
        EXPECT_TRUE(all_close(std::vector<float>(outs.begin() + off, outs.begin() + off + n), out, {0.0}));
        be->fake_quant_backward(dx.data(), mask.data(), dys.data() + off, n);
        EXPECT_TRUE(all_close(std::vector<float>(dxs.begin() + off, dxs.begin() + off + n), dx, {0.0}));
      }
    }
  }
}

TEST_F(QuantTorch, GemmU8S8MatchesIntegerMatmul) {
  for (int k = 0; k < 2; ++k) {
    const std::string p = "gemm" + std::to_string(k) + ".";
    const auto A = narrow<uint8_t>(i64(p + "a"));
    const auto B = narrow<int8_t>(i64(p + "b"));
    const auto want = narrow<int32_t>(i64(p + "c"));
    const int M = static_cast<int>(dim(p + "a", 0)), K = static_cast<int>(dim(p + "a", 1)),
              N = static_cast<int>(dim(p + "b", 0));
    for (auto& be : backends()) {
      std::vector<int32_t> C(static_cast<size_t>(M) * N);
      be->gemm_u8s8_s32(M, N, K, A.data(), K, B.data(), K, C.data(), N);
      EXPECT_TRUE(all_equal(want, C)) << be->name() << " " << p;
    }
  }
}

}  // namespace
}  // namespace bertrt
