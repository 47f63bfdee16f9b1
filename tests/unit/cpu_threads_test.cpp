// The cpu backend gives bit-identical results for every thread count (backends/cpu/cpu_backend.h):
// each op at BERT-mini training sizes (big enough to be split), run with 1, 2 and 3 threads, again
// with 2 to check run-to-run determinism, and on a pool of 4 narrowed to 2 and 3 (the adaptive
// width). Exact equality is the claim, so the tolerance is 0.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>

#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "embedding_op_cases.h"
#include "op_test_util.h"

namespace bertrt {
namespace {

using test::randn;

// Runs `op` on a fresh CpuBackend per thread count; returns the buffers it wrote.
using OpRun = std::function<std::vector<std::vector<float>>(CpuBackend&)>;

// Pools of 2 and 3 threads, again 2 (run-to-run), and a pool of 4 narrowed to 2 and to 3 (the
// adaptive width: the splits follow the active threads).
void expect_same_for_all_thread_counts(const std::string& label, const OpRun& op) {
  CpuBackend one(1);
  const auto want = op(one);
  for (auto [threads, active] : {std::pair{2, 2}, std::pair{3, 3}, std::pair{2, 2},
                                 std::pair{4, 2}, std::pair{4, 3}}) {
    CpuBackend many(threads);
    many.thread_pool().set_active_threads(active);
    const auto got = op(many);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].size(), want[k].size());
      EXPECT_EQ(0, std::memcmp(got[k].data(), want[k].data(), want[k].size() * sizeof(float)))
          << label << ": output " << k << " differs with " << active << " of " << threads
          << " threads";
    }
  }
}

// Rows: a BERT-mini batch of 32 x 128 tokens natively, 8 x 128 when test::sparse (still several of
// the backend's 256-row GEMM blocks, so the work is still split).
const int kRows = test::sparse() ? 8 * 128 : 32 * 128;
constexpr int kC = 256, kFF = 1024, kT = 128, kNH = 4, kV = 30522;

TEST(CpuThreads, Gemm) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int M = kRows / 4, N = kFF, K = kC;  // also N > M: split along the other side
      for (auto mn : {std::pair{M, N}, std::pair{N, M}}) {
        const int m = mn.first, n = mn.second;  // C++17 lambdas cannot capture structured bindings
        const auto a = randn(static_cast<size_t>(m) * K, 1), b = randn(static_cast<size_t>(n) * K, 2);
        const auto c0 = randn(static_cast<size_t>(m) * n, 3);
        expect_same_for_all_thread_counts("gemm", [&](CpuBackend& be) {
          auto c = c0;
          be.gemm(ta, tb, m, n, K, 0.5f, a.data(), ta ? m : K, b.data(), tb ? K : n, 1.0f, c.data(), n);
          return std::vector<std::vector<float>>{c};
        });
      }
    }
}

// The block lengths of the split at inference's B1 shapes and odd sizes: BERT-mini's 256-wide C
// (4 blocks of 64), BERT-base's 768 (4 of 192), and lengths whose last block is short.
TEST(CpuThreads, GemmBlockShapes) {
  for (auto [m, n, k] :
       {std::tuple{128, 256, 256}, std::tuple{128, 768, 64}, std::tuple{130, 200, 96},
        std::tuple{97, 1000, 33}, std::tuple{1000, 97, 40}}) {
    const int M = m, N = n, K = k;  // C++17 lambdas cannot capture structured bindings
    const auto a = randn(static_cast<size_t>(M) * K, 4), b = randn(static_cast<size_t>(N) * K, 5);
    expect_same_for_all_thread_counts(
        "gemm " + std::to_string(M) + "x" + std::to_string(N), [&](CpuBackend& be) {
          std::vector<float> c(static_cast<size_t>(M) * N);
          be.gemm(false, true, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, c.data(), N);
          return std::vector<std::vector<float>>{c};
        });
  }
}

TEST(CpuThreads, GemmBatched) {
  const int batch = 8 * kNH, D = kC / kNH;
  const auto q = randn(static_cast<size_t>(batch) * kT * D, 4), k = randn(q.size(), 5);
  expect_same_for_all_thread_counts("gemm_batched", [&](CpuBackend& be) {
    std::vector<float> s(static_cast<size_t>(batch) * kT * kT);
    be.gemm_batched(batch, false, true, kT, kT, D, 1.0f, q.data(), D, kT * D, k.data(), D, kT * D,
                    0.0f, s.data(), kT, kT * kT);
    return std::vector<std::vector<float>>{s};
  });
}

TEST(CpuThreads, ElementwiseAndRowOps) {
  const size_t n = static_cast<size_t>(kRows) * kFF;
  const auto x = randn(n, 6), dy = randn(n, 7), bias = randn(kFF, 8);
  for (Gelu kind : {Gelu::kErf, Gelu::kTanh})
    expect_same_for_all_thread_counts("gelu", [&](CpuBackend& be) {
      std::vector<float> y(n), dx = dy;
      be.gelu_forward(y.data(), x.data(), n, kind);
      be.gelu_backward(dx.data(), x.data(), dy.data(), n, kind);
      return std::vector<std::vector<float>>{y, dx};
    });
  expect_same_for_all_thread_counts("add/bias", [&](CpuBackend& be) {
    std::vector<float> y(n), db = bias;
    be.add(y.data(), x.data(), dy.data(), n);
    be.bias_add(y.data(), bias.data(), kRows, kFF);
    be.bias_backward(db.data(), dy.data(), kRows, kFF);
    return std::vector<std::vector<float>>{y, db};
  });
}

TEST(CpuThreads, LayerNorm) {
  const size_t n = static_cast<size_t>(kRows) * kC;
  const auto x = randn(n, 9, 2.0f, 0.5f), dy = randn(n, 10), w = randn(kC, 11), b = randn(kC, 12);
  expect_same_for_all_thread_counts("layernorm", [&](CpuBackend& be) {
    std::vector<float> y(n), mean(kRows), rstd(kRows), dx = dy, dw = w, db = b;
    be.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), kRows, kC, 1e-12f);
    be.layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                          rstd.data(), kRows, kC);
    return std::vector<std::vector<float>>{y, mean, rstd, dx, dw, db};
  });
}

TEST(CpuThreads, Softmax) {
  const int B = 8;
  const size_t n = static_cast<size_t>(B) * kNH * kT * kT;
  const auto s = randn(n, 13, 3.0f), dp = randn(n, 14);
  std::vector<float> mask(static_cast<size_t>(B) * kT, 0.0f);
  for (int j = kT / 2; j < kT; ++j) mask[j] = -10000.0f;  // padding in the first sequence
  expect_same_for_all_thread_counts("softmax", [&](CpuBackend& be) {
    std::vector<float> p(n), ds = dp;
    be.softmax_forward(p.data(), s.data(), mask.data(), B, kNH, kT, 0.125f);
    be.softmax_backward(ds.data(), p.data(), dp.data(), B * kNH * kT, kT, 0.125f);
    return std::vector<std::vector<float>>{p, ds};
  });
}

TEST(CpuThreads, EmbeddingCrossEntropyAdamW) {
  const int V = 2000;  // repeated ids: the scatter-add order matters
  std::vector<int32_t> ids(kRows);
  for (int i = 0; i < kRows; ++i) ids[i] = (i * 37) % V;
  const auto table = randn(static_cast<size_t>(V) * kC, 15), dout = randn(static_cast<size_t>(kRows) * kC, 16);
  expect_same_for_all_thread_counts("embedding", [&](CpuBackend& be) {
    std::vector<float> out(dout.size()), dtable = table;
    be.embedding_forward(out.data(), ids.data(), table.data(), kRows, kC);
    be.embedding_backward(dtable.data(), ids.data(), dout.data(), kRows, kC);
    return std::vector<std::vector<float>>{out, dtable};
  });

  const int rows = 640;
  const auto logits = randn(static_cast<size_t>(rows) * kV, 17, 2.0f);
  std::vector<int32_t> t(rows);
  for (int i = 0; i < rows; ++i) t[i] = i % 5 == 0 ? -100 : (i * 7919) % kV;
  expect_same_for_all_thread_counts("cross_entropy", [&](CpuBackend& be) {
    std::vector<float> d(logits.size());
    const double loss = test::ce_sum(be, d.data(), logits.data(), t.data(), rows, kV, 1.0f / rows);
    float loss_bits[2];
    std::memcpy(loss_bits, &loss, sizeof loss);
    return std::vector<std::vector<float>>{d, {loss_bits[0], loss_bits[1]}};
  });

  const size_t np = 1 << 20;
  const auto p0 = randn(np, 18), g = randn(np, 19, 0.1f);
  for (bool bc : {true, false})
    expect_same_for_all_thread_counts("adamw", [&](CpuBackend& be) {
      AdamWHyper h;
      h.weight_decay = 0.01f;
      h.bias_correction = bc;
      std::vector<float> p = p0, m(np), v(np);
      for (int step = 1; step <= 2; ++step) be.adamw_step(p.data(), m.data(), v.data(), g.data(), np, h, step);
      return std::vector<std::vector<float>>{p, m, v};
    });
}

// The default thread count is the CPUs of the affinity mask (taskset, cpusets, big-core pinning),
// and a user's count above them is capped: an extra thread only waits, by spinning (on 2 CPUs,
// `taskset -c 0 bertrt bench` of BERT-mini took 608 ms with 2 threads, 6.8 ms with 1). An explicit
// CpuBackend(n) is taken as it is, so the suite still splits work 3 ways on 2 CPUs.
TEST(CpuThreads, DefaultFollowsTheAffinityMaskAndCapsTheUsersCount) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(cpu::usable_cpus(), CPU_COUNT(&all));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  const char* old = std::getenv("BERTRT_NUM_THREADS");
  const std::string saved = old ? old : "";
  unsetenv("BERTRT_NUM_THREADS");
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // this thread: the pool is made here
  const int pinned_default = cpu::default_num_threads(), pinned_backend = CpuBackend().num_threads();
  setenv("BERTRT_NUM_THREADS", "3", 1);
  const int pinned_env = cpu::default_num_threads(), pinned_capped = cpu::usable_threads(3);
  const int explicit_count = CpuBackend(3).num_threads();
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  const int free_env = cpu::default_num_threads();
  if (old)
    setenv("BERTRT_NUM_THREADS", saved.c_str(), 1);
  else
    unsetenv("BERTRT_NUM_THREADS");
  EXPECT_EQ(pinned_default, 1);
  EXPECT_EQ(pinned_backend, 1);
  EXPECT_EQ(pinned_env, 1);
  EXPECT_EQ(pinned_capped, 1);
  EXPECT_EQ(explicit_count, 3);
  EXPECT_EQ(free_env, std::min(3, CPU_COUNT(&all)));
}

// The embedding head's ops split over sequences (pooling: a sequence a tile at this size) and
// rows (normalization: ~43 rows a tile): a batch of 32 texts x 128 tokens at BERT-mini's width,
// every pooling mode, and 1024 rows of 384.
TEST(CpuThreads, EmbeddingHeadOps) {
  const int B = 32, T = 128, H = kC, ld = 2 * kC;
  const test::PoolInputs in = test::pool_inputs(B, T, H, 40);
  const auto dout = randn(size_t(B) * ld, 41);
  for (Pooling mode : test::all_poolings())
    expect_same_for_all_thread_counts("pool_tokens " + test::pooling_label(mode), [&](CpuBackend& be) {
      std::vector<float> out(size_t(B) * ld, 0.0f), dh(in.hidden.size(), 0.5f);
      be.pool_tokens(out.data() + H, ld, in.hidden.data(), in.mask.data(), in.prompt.data(), B, T,
                     H, mode);
      be.pool_tokens_backward(dh.data(), dout.data(), ld, in.hidden.data(), in.mask.data(),
                              in.prompt.data(), B, T, H, mode);
      return std::vector<std::vector<float>>{out, dh};
    });
  const int rows = 1024, cols = 384;
  const auto x = randn(size_t(rows) * cols, 42), dy = randn(size_t(rows) * cols, 43);
  expect_same_for_all_thread_counts("l2_normalize_rows", [&](CpuBackend& be) {
    std::vector<float> y(x.size()), dx(x.size(), 0.25f);
    be.l2_normalize_rows(y.data(), x.data(), cols, rows, cols);
    be.l2_normalize_rows_backward(dx.data(), cols, x.data(), cols, dy.data(), rows, cols);
    return std::vector<std::vector<float>>{y, dx};
  });
}

}  // namespace
}  // namespace bertrt
