// The sentence-embedding head and its losses as backend ops (heads/embedding_head_ops.h,
// train/embedding_loss.h) against the host's scalar statement of the same math, on the
// reference, cpu and checked backends (the last holds them to the memory contract: backend
// memory only, ops deferred until sync): the embeddings, each loss (mnrl with Matryoshka dims,
// cosine, cosent), the Dense weights' gradients and ∂loss/∂last_hidden_state.
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "embedding_head_cases.h"

namespace bertrt {
namespace {

// The host head computes in float with double dot products; the backends' GEMMs sum in float
// (K ≤ 24 terms), the losses too (cosines of unit rows; the MNRL scores times scale 20): a few
// hundred float ulps of each quantity's scale at most. 1e-5 of the scale is ~80 ulps.
constexpr double kRel = 1e-5;

TEST(EmbeddingHeadOps, MatchTheHostHeadOnEveryHostAndCheckedBackend) {
  for (const std::string name : {"reference", "cpu", "checked"})
    for (bool include_prompt : {true, false})
      for (const auto& [label, loss] : test::head_losses()) {
        SCOPED_TRACE(name + " " + label + (include_prompt ? "" : " include_prompt=false"));
        const test::HeadCase c = test::head_case(include_prompt);
        const test::HeadRun want = test::run_head_on_host(c, loss, test::head_labels());
        auto be = make_backend(name);
        EXPECT_TRUE(test::same_run(want, test::run_head(*be, c, loss, test::head_labels()), kRel));
      }
}

// The checked backend runs the cpu backend's ops behind the contract: the same floats.
TEST(EmbeddingHeadOps, CheckedEqualsCpuBitForBit) {
  for (const auto& [label, loss] : test::head_losses()) {
    SCOPED_TRACE(label);
    const test::HeadCase c = test::head_case(false);
    auto cpu = make_backend("cpu"), checked = make_backend("checked");
    EXPECT_TRUE(test::same_run(test::run_head(*cpu, c, loss, test::head_labels()),
                               test::run_head(*checked, c, loss, test::head_labels()), 0.0));
  }
}

}  // namespace
}  // namespace bertrt
