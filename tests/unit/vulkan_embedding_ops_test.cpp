// The sentence-embedding head's ops on the Vulkan backend (lavapipe in CI) under the Khronos
// validation layer (any message fails the test), against the scalar reference on the cases of
// embedding_op_cases.h: every pooling mode forward and backward, the normalization and its
// backward, CoSENT; then the head's forward and backward and each loss through the backend
// against the cpu backend. ctest runs it on both memory paths, as vulkan_test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#ifdef BERTRT_HAVE_VULKAN
#include "backends/reference/reference_backend.h"
#include "backends/vulkan/vk_context.h"
#include "backends/vulkan/vulkan_backend.h"
#include "core/error.h"
#include "embedding_head_cases.h"
#include "embedding_op_cases.h"
#endif

namespace bertrt {
namespace {

#ifndef BERTRT_HAVE_VULKAN
TEST(VulkanEmbeddingOps, NotBuilt) { GTEST_SKIP() << "this build has no Vulkan backend"; }
#else

// As vulkan_test: the validation layer on and the pipeline cache in the build tree unless the
// environment says otherwise.
const bool kEnvironmentDefaults = [] {
  setenv("BERTRT_VULKAN_VALIDATION", "1", 0);
  setenv("BERTRT_VULKAN_PIPELINE_CACHE", BERTRT_BUILD_DIR_DEFAULT "/vulkan_pipeline_cache.bin", 0);
  return true;
}();

// One backend for the suite, torn down by a gtest environment (not a static destructor).
std::unique_ptr<VulkanBackend> g_backend;
bool g_tried = false;

VulkanBackend* device() {
  if (!g_tried) {
    g_tried = true;
    try {
      g_backend = std::make_unique<VulkanBackend>();
    } catch (const Error& e) {
      std::fprintf(stderr, "no Vulkan device: %s\n", e.what());
    }
  }
  return g_backend.get();
}

class Environment : public ::testing::Environment {
 public:
  void TearDown() override { g_backend.reset(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new Environment);

const std::vector<test::EmbeddingOpCase>& cases() {
  static const std::vector<test::EmbeddingOpCase> all = test::embedding_op_cases(true);
  return all;
}

class VulkanDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    be_ = device();
    if (!be_) {
      const char* req = std::getenv("BERTRT_REQUIRE_VULKAN");
      if (req && std::string(req) == "1") FAIL() << "BERTRT_REQUIRE_VULKAN=1 and no Vulkan device";
      GTEST_SKIP() << "no Vulkan device (install mesa-vulkan-drivers for lavapipe)";
    }
    messages_ = vk::Context::validation_messages();
  }
  void TearDown() override {
    if (be_) {
      EXPECT_EQ(vk::Context::validation_messages(), messages_) << "validation messages";
    }
  }
  VulkanBackend* be_ = nullptr;
  int64_t messages_ = 0;
};

class VulkanEmbeddingOps : public VulkanDevice, public ::testing::WithParamInterface<size_t> {};

TEST_P(VulkanEmbeddingOps, MatchesTheReference) {
  const test::EmbeddingOpCase& c = cases()[GetParam()];
  EXPECT_TRUE(be_->supports(c.op)) << op_name(c.op);
  ReferenceBackend ref;
  EXPECT_TRUE(c.check(ref, *be_)) << c.label;
}

INSTANTIATE_TEST_SUITE_P(Ops, VulkanEmbeddingOps, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return cases()[info.param].label;
                         });

// The whole head and each loss on the device against the host's statement of them, within the
// bound embedding_head_ops_test uses for the cpu backend: the device's sums are fp32 too.
class VulkanEmbeddingHead : public VulkanDevice {};

TEST_F(VulkanEmbeddingHead, HeadAndLossesMatchTheHost) {
  for (bool include_prompt : {true, false})
    for (const auto& [label, loss] : test::head_losses()) {
      SCOPED_TRACE(label + (include_prompt ? "" : " include_prompt=false"));
      const test::HeadCase c = test::head_case(include_prompt);
      const test::HeadRun want = test::run_head_on_host(c, loss, test::head_labels());
      EXPECT_TRUE(test::same_run(want, test::run_head(*be_, c, loss, test::head_labels()), 1e-5));
    }
}

#endif

}  // namespace
}  // namespace bertrt
