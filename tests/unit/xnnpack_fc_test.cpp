// The XNNPACK fully-connected provider (backends/cpu/xnnpack_fc.h): its FC against a float64
// reference on odd shapes (M, N, K primes, 1 and non-multiples of the 5x16 / 7x16 / NEON tiles),
// strides and bias; through CpuBackend::gemm (what ran is counted, the packed weight is reused and
// re-made when the weight changes, thread count does not change a bit, training turns the provider
// off); and a model forward with it against the PyTorch float64 reference within the tolerance the
// default path meets there (bert_reference_test's 2e-5). Skipped, with the reason, when the build
// has no XNNPACK or XNNPACK rejects the CPU.
#include "backends/cpu/xnnpack_fc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/bert_model.h"
#include "op_test_util.h"
#include "test_util.h"

namespace bertrt {
namespace {

#define SKIP_WITHOUT_XNNPACK()                                             \
  do {                                                                     \
    if (!cpu::xnnpack_available())                                         \
      GTEST_SKIP() << "no XNNPACK: " << cpu::xnnpack_unavailable_reason(); \
  } while (0)

// Y = X·Wᵀ + b in float64, with Σ_k |x·w| + |b| per element: any order of fp32 sums of these K
// products (with or without FMA) is within γ_K · that of the exact value, γ_K = K·u / (1 − K·u),
// u = 2⁻²⁴ (Higham, Accuracy and Stability of Numerical Algorithms, §3.1); +1 term for the bias
// add and the final rounding. A wrong product or a skipped k is ≫ this bound.
struct Want {
  std::vector<float> y;
  std::vector<double> tol;
};
Want reference_fc(const std::vector<float>& X, int ldx, const std::vector<float>& W,
                  const float* bias, int M, int N, int K) {
  Want w{std::vector<float>(size_t(M) * N), std::vector<double>(size_t(M) * N)};
  const double u = std::ldexp(1.0, -24), gamma = (K + 2) * u / (1 - (K + 2) * u);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = bias ? bias[n] : 0.0, a = bias ? std::fabs(bias[n]) : 0.0;
      for (int k = 0; k < K; ++k) {
        const double p = double(X[size_t(m) * ldx + k]) * W[size_t(n) * K + k];
        s += p, a += std::fabs(p);
      }
      w.y[size_t(m) * N + n] = float(s);
      w.tol[size_t(m) * N + n] = gamma * a + std::fabs(s) * u;  // + rounding of want to float
    }
  return w;
}

struct Shape {
  int M, N, K;
};

// The last two are big enough for the cpu backend to hand XNNPACK its thread pool.
const Shape kOddShapes[] = {{1, 1, 1},    {1, 17, 5},      {2, 3, 7},      {5, 16, 16},
                            {7, 33, 31},  {8, 15, 64},     {13, 37, 29},   {17, 48, 97},
                            {31, 64, 13}, {128, 100, 256}, {129, 257, 33}, {521, 33, 17},
                            {3, 613, 151}};

TEST(XnnpackFc, OddShapesStridesAndBiasAgainstFloat64) {
  SKIP_WITHOUT_XNNPACK();
  cpu::XnnpackFc fc;
  int cases = 0;
  for (const Shape s : kOddShapes)
    for (int pad : {0, 3})  // X and Y rows longer than K and N
      for (bool with_bias : {false, true}) {
        const int ldx = s.K + pad, ldy = s.N + pad;
        const uint32_t seed = 7 + s.M * 131 + s.N * 17 + s.K + pad;
        const auto X = test::randn(size_t(s.M) * ldx, seed);
        const auto W = test::randn(size_t(s.N) * s.K, seed + 1, 0.1f);
        const auto b = test::randn(size_t(s.N), seed + 2);
        const float* bias = with_bias ? b.data() : nullptr;
        const Want want = reference_fc(X, ldx, W, bias, s.M, s.N, s.K);
        std::vector<float> Y(size_t(s.M) * ldy, std::numeric_limits<float>::quiet_NaN());
        fc.run(Y.data(), ldy, X.data(), ldx, W.data(), bias, s.M, s.N, s.K, nullptr);
        std::vector<float> got(size_t(s.M) * s.N);
        for (int m = 0; m < s.M; ++m)
          std::memcpy(&got[size_t(m) * s.N], &Y[size_t(m) * ldy], sizeof(float) * s.N);
        EXPECT_TRUE(test::all_close(want.y, got, want.tol))
            << "M=" << s.M << " N=" << s.N << " K=" << s.K << " pad=" << pad
            << " bias=" << with_bias;
        for (int m = 0; m < s.M; ++m)  // the padding of Y is not written
          for (int c = s.N; c < ldy; ++c) EXPECT_TRUE(std::isnan(Y[size_t(m) * ldy + c]));
        ++cases;
      }
  EXPECT_EQ(fc.operators(), size_t(cases));  // one operator per (weight, bias, shape, strides)
  RecordProperty("cases", cases);
}

// gemm as linear_forward calls it: Y[M, N] = X[M, K] · W[N, K]ᵀ.
std::vector<float> linear_gemm(CpuBackend& be, const std::vector<float>& X,
                               const std::vector<float>& W, int M, int N, int K) {
  std::vector<float> Y(size_t(M) * N);
  be.gemm(false, true, M, N, K, 1.0f, X.data(), K, W.data(), K, 0.0f, Y.data(), N);
  return Y;
}

TEST(XnnpackFc, CpuBackendRunsItCountsItAndIsThreadCountIndependent) {
  SKIP_WITHOUT_XNNPACK();
  CpuBackend one(1), two(2), blas(2);
  one.set_fc_provider(cpu::FcProvider::kXnnpack);
  two.set_fc_provider(cpu::FcProvider::kXnnpack);
  blas.set_fc_provider(cpu::FcProvider::kOpenBlas);
  for (const Shape s : kOddShapes) {
    const auto X = test::randn(size_t(s.M) * s.K, 40 + s.M);
    const auto W = test::randn(size_t(s.N) * s.K, 41 + s.N, 0.1f);
    const Want want = reference_fc(X, s.K, W, nullptr, s.M, s.N, s.K);
    const auto y1 = linear_gemm(one, X, W, s.M, s.N, s.K);
    const auto y2 = linear_gemm(two, X, W, s.M, s.N, s.K);
    const auto yb = linear_gemm(blas, X, W, s.M, s.N, s.K);
    // Each output is one microkernel's sum over all of K, whichever thread runs its tile.
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)))
        << "M=" << s.M << " N=" << s.N << " K=" << s.K;
    EXPECT_TRUE(test::all_close(want.y, y2, want.tol)) << "xnnpack M=" << s.M;
    EXPECT_TRUE(test::all_close(want.y, yb, want.tol)) << "openblas M=" << s.M;
  }
  const size_t n = std::size(kOddShapes);
  EXPECT_EQ(two.fc_stats().xnnpack_calls, n);
  EXPECT_EQ(two.fc_stats().openblas_calls, 0u);
  EXPECT_EQ(blas.fc_stats().openblas_calls, n);
  EXPECT_EQ(blas.fc_stats().xnnpack_calls, 0u);
  EXPECT_GT(two.fc_stats().packed_bytes, 0u);
  EXPECT_NE(two.fc_summary().find("xnnpack " + std::to_string(n)), std::string::npos)
      << two.fc_summary();
  // Not the Linear form (alpha ≠ 1, beta ≠ 0): OpenBLAS, not counted as a Linear GEMM.
  std::vector<float> X(6, 1.0f), W(6, 1.0f), Y(4, 0.0f);
  two.gemm(false, true, 2, 2, 3, 2.0f, X.data(), 3, W.data(), 3, 1.0f, Y.data(), 2);
  EXPECT_EQ(two.fc_stats().xnnpack_calls + two.fc_stats().openblas_calls, n);
  EXPECT_EQ(Y[0], 6.0f);
}

TEST(XnnpackFc, WeightIsPackedOnceAndRepackedWhenItChanges) {
  SKIP_WITHOUT_XNNPACK();
  CpuBackend be(2);
  be.set_fc_provider(cpu::FcProvider::kXnnpack);
  const int M = 9, N = 40, K = 24;
  const auto X = test::randn(size_t(M) * K, 1);
  auto W = test::randn(size_t(N) * K, 2, 0.1f);
  linear_gemm(be, X, W, M, N, K);
  const size_t packed = be.fc_stats().packed_bytes;
  EXPECT_EQ(packed, size_t(N) * K * sizeof(float));
  linear_gemm(be, X, W, M, N, K);  // same weight: the same operator
  EXPECT_EQ(be.fc_stats().packed_bytes, packed);
  // Another weight loaded at the same address (another model freed and allocated there).
  const auto W2 = test::randn(size_t(N) * K, 3, 0.1f);
  const float* at = W.data();
  std::copy(W2.begin(), W2.end(), W.begin());
  ASSERT_EQ(W.data(), at);
  const Want want = reference_fc(X, K, W, nullptr, M, N, K);
  EXPECT_TRUE(test::all_close(want.y, linear_gemm(be, X, W, M, N, K), want.tol));
  EXPECT_EQ(be.fc_stats().packed_bytes, packed);  // replaced, not added
}

TEST(XnnpackFc, TrainingTurnsTheProviderOffAndDropsThePackedWeights) {
  SKIP_WITHOUT_XNNPACK();
  CpuBackend be(2), blas(2);
  be.set_fc_provider(cpu::FcProvider::kXnnpack);
  blas.set_fc_provider(cpu::FcProvider::kOpenBlas);
  const int M = 33, N = 20, K = 19;
  const auto X = test::randn(size_t(M) * K, 4);
  const auto W = test::randn(size_t(N) * K, 5, 0.1f);
  linear_gemm(be, X, W, M, N, K);
  EXPECT_EQ(be.fc_stats().xnnpack_calls, 1u);
  std::vector<float> db(size_t(N), 0.0f);
  be.bias_backward(db.data(), X.data(), M, N);  // a backward op: training
  EXPECT_TRUE(be.fc_stats().training_seen);
  EXPECT_EQ(be.fc_stats().packed_bytes, 0u);
  const auto y = linear_gemm(be, X, W, M, N, K);
  const auto yb = linear_gemm(blas, X, W, M, N, K);
  EXPECT_EQ(be.fc_stats().xnnpack_calls, 1u);
  EXPECT_EQ(0, std::memcmp(y.data(), yb.data(), y.size() * sizeof(float)))
      << "after training the cpu backend runs OpenBLAS, bit for bit";
  EXPECT_NE(be.fc_summary().find("training ran"), std::string::npos) << be.fc_summary();
}

TEST(XnnpackFc, ProviderNames) {
  EXPECT_STREQ(cpu::fc_provider_name(cpu::FcProvider::kAuto), "auto");
  CpuBackend be(1);
  if (!cpu::xnnpack_available()) {
    try {
      be.set_fc_provider(cpu::FcProvider::kXnnpack);
      FAIL() << "set_fc_provider(xnnpack) without XNNPACK did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("xnnpack"), std::string::npos) << e.what();
    }
    return;
  }
  be.set_fc_provider(cpu::FcProvider::kXnnpack);
  EXPECT_EQ(be.fc_provider(), cpu::FcProvider::kXnnpack);
}

// auto never takes XNNPACK where the bench measured it slower (M = 1, a 2-label classifier) and
// counts every Linear it routes.
TEST(XnnpackFc, AutoLeavesTheMeasuredLosingShapesOnOpenBlas) {
  EXPECT_FALSE(cpu::xnnpack_fc_wins(1, 768, 768));
  EXPECT_FALSE(cpu::xnnpack_fc_wins(8, 2, 768));
  EXPECT_FALSE(cpu::xnnpack_fc_wins(128, 17, 5));
  CpuBackend be(1);
  be.set_fc_provider(cpu::FcProvider::kAuto);
  const int M = 1, N = 2, K = 768;
  const auto X = test::randn(size_t(M) * K, 8);
  const auto W = test::randn(size_t(N) * K, 9, 0.1f);
  linear_gemm(be, X, W, M, N, K);
  EXPECT_EQ(be.fc_stats().openblas_calls, 1u);
  EXPECT_EQ(be.fc_stats().xnnpack_calls, 0u);
}

// auto packs only while the copies fit its budget (16 MB unless BERTRT_FC_XNNPACK_MAX_MB says
// otherwise); the weights beyond it stay on OpenBLAS, those already packed keep running on XNNPACK.
TEST(XnnpackFc, AutoPacksWithinItsMemoryBudget) {
  SKIP_WITHOUT_XNNPACK();
  const int M = 8, N = 768, K = 768;
  if (!cpu::xnnpack_fc_wins(M, N, K))
    GTEST_SKIP() << "auto takes XNNPACK for no shape on this CPU (xnnpack_fc_wins)";
  CpuBackend be(2);
  be.set_fc_provider(cpu::FcProvider::kAuto);
  const size_t w_bytes = size_t(N) * K * sizeof(float), budget = cpu::xnnpack_auto_budget_bytes();
  const size_t fit = budget / w_bytes;
  const auto X = test::randn(size_t(M) * K, 10);
  std::vector<std::vector<float>> weights;
  for (size_t i = 0; i < fit + 2; ++i) weights.push_back(test::randn(size_t(N) * K, 11 + i, 0.1f));
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& W : weights) linear_gemm(be, X, W, M, N, K);
  EXPECT_EQ(be.fc_stats().xnnpack_calls, 2 * fit);
  EXPECT_EQ(be.fc_stats().openblas_calls, 2 * (weights.size() - fit));
  EXPECT_EQ(be.fc_stats().packed_bytes, fit * w_bytes);
  EXPECT_LE(be.fc_stats().packed_bytes, budget);
}

// A BERT forward (MLM + NSP + classifier heads, both GELUs) with every Linear on XNNPACK against
// the PyTorch float64 reference (tests/reference/bert_reference.py): within 2e-5 of the largest
// magnitude, bert_reference_test's kTol, which the OpenBLAS path meets on the same file. The two
// providers differ in summation order only, so the same bound holds for both.
class XnnpackModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(XnnpackModelTest, ForwardMatchesThePyTorchReference) {
  SKIP_WITHOUT_XNNPACK();
  constexpr double kTol = 2e-5;
  const std::string path = test::build_dir() + "/reference/bert_" + GetParam() + ".safetensors";
  const SafetensorsFile f = SafetensorsFile::open(path);
  const auto j = nlohmann::json::parse(f.metadata().at("config"));
  BertConfig c;
  c.vocab_size = j["vocab_size"], c.hidden_size = j["hidden_size"];
  c.num_hidden_layers = j["num_hidden_layers"], c.num_attention_heads = j["num_attention_heads"];
  c.intermediate_size = j["intermediate_size"], c.hidden_act = j["hidden_act"];
  c.max_position_embeddings = j["max_position_embeddings"],
  c.type_vocab_size = j["type_vocab_size"];
  c.layer_norm_eps = j["layer_norm_eps"], c.pad_token_id = j["pad_token_id"];
  HeadsConfig heads;
  heads.mlm = heads.nsp = true;
  for (int i = 0; i < std::stoi(f.metadata().at("num_labels")); ++i)
    heads.labels.push_back("label_" + std::to_string(i));
  BertModel model(c, heads);
  for (const ParamInfo& p : model.layout().params()) {
    const auto v = f.to_f32("param/" + p.name);
    ASSERT_EQ(v.size(), p.numel) << p.name;
    std::copy(v.begin(), v.end(), model.params() + p.offset);
  }
  auto ints = [&](const char* name) {
    const auto v = f.to_i64(name);
    return std::vector<int32_t>(v.begin(), v.end());
  };
  const auto ids = ints("input/input_ids"), types = ints("input/token_type_ids"),
             mask = ints("input/attention_mask"), positions = ints("input/mlm_positions");
  const auto shape = f.at("input/input_ids").shape;
  const EncoderInputs in{int(shape[0]), int(shape[1]), ids.data(), types.data(), mask.data()};
  Targets t;
  t.mlm_positions = positions.data(), t.num_masked = int(positions.size());

  CpuBackend be(2);
  be.set_fc_provider(cpu::FcProvider::kXnnpack);
  model.forward(be, in, t, /*training=*/false);
  const auto s = be.fc_stats();
  EXPECT_GT(s.xnnpack_calls, size_t(6 * c.num_hidden_layers)) << be.fc_summary();
  EXPECT_EQ(s.openblas_calls, 0u) << be.fc_summary();
  EXPECT_TRUE(
      test::rel_close(model.last_hidden_state(), f.to_f32("output/last_hidden_state"), kTol));
  EXPECT_TRUE(test::rel_close(model.pooler_output(), f.to_f32("output/pooler_output"), kTol));
  EXPECT_TRUE(
      test::rel_close(model.prediction_logits(), f.to_f32("output/prediction_logits"), kTol));
  EXPECT_TRUE(test::rel_close(model.seq_relationship_logits().data(),
                              f.to_f32("output/seq_relationship_logits"), kTol));
  EXPECT_TRUE(test::rel_close(model.logits().data(), f.to_f32("output/logits"), kTol));
  // A second forward reuses every packed weight.
  const size_t packed = s.packed_bytes;
  model.forward(be, in, t, false);
  EXPECT_EQ(be.fc_stats().packed_bytes, packed);
  EXPECT_EQ(be.fc_stats().xnnpack_calls, 2 * s.xnnpack_calls);
}

INSTANTIATE_TEST_SUITE_P(Gelu, XnnpackModelTest, ::testing::Values("gelu", "gelu_new"),
                         [](const auto& info) {
                           return info.param == "gelu" ? std::string("erf") : std::string("tanh");
                         });

}  // namespace
}  // namespace bertrt
