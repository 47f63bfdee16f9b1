// LoRA against Hugging Face PEFT itself: the logits with the adapter, the logits after merging,
// and one training step's loss and gradients (every lora_A, lora_B and the classifier) that PEFT
// computed (tests/reference/expected/peft_lora.json, written by peft_reference.py --upstream) on
// the folders peft_reference.py --write-case makes, recomputed by bertrt with the base converted
// in-process and the PEFT folders read by --adapter's loader (io/peft_adapter.h).
//
// Tolerances: both sides are float32 through two encoder layers over 36-wide rows (sums of at most
// 37 products) plus rank-3 and rank-4 adapter products, in different summation orders. Logits are
// compared within 2e-5 of the row's largest magnitude (st_check.py's bound for the same encoder:
// about 170 float32 ulps, the worst case of the chain); merging changes the order of the sums again
// (W + s·B·A, then one product), which stays inside the same bound. A gradient is compared within
// 1e-4 of its tensor's largest magnitude: the backward chain is twice as long and its sums reach
// B·T = 30 rows. Measured: at most 7.4e-7 of the scale (logits, merged logits and gradients; the
// test prints them). A mistake (a missed scaling, the pooler's adapter left out, a transposed A)
// moves values by 1e-2 and more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/reference/reference_backend.h"
#include "convert/hf_import.h"
#include "io/adapter_io.h"
#include "io/model_file.h"
#include "io/model_io.h"
#include "test_util.h"

namespace bertrt {
namespace {

constexpr double kLogitTol = 2e-5, kGradTol = 1e-4;

nlohmann::json expected() {
  return nlohmann::json::parse(
      std::ifstream(test::source_dir() + "/tests/reference/expected/peft_lora.json"));
}

double scale_of(const nlohmann::json& row) {
  double s = 1.0;
  for (const auto& x : row) s = std::max(s, std::abs(x.get<double>()));
  return s;
}

// The largest difference seen, relative to its scale, printed for the record.
double expect_logits(const std::vector<float>& got, const nlohmann::json& want, const char* what) {
  size_t k = 0;
  double worst = 0;
  for (const auto& row : want) {
    const double s = scale_of(row);
    for (const auto& x : row) {
      if (k >= got.size()) break;
      EXPECT_NEAR(got[k], x.get<double>(), kLogitTol * s) << what << " [" << k << "]";
      worst = std::max(worst, std::abs(got[k] - x.get<double>()) / s);
      ++k;
    }
  }
  EXPECT_EQ(k, got.size()) << what;
  return worst;
}

struct Case {
  test::TempDir dir;
  nlohmann::json j = expected();
  std::vector<int32_t> ids, types, mask, labels;
  int B = 0, T = 0;
  Case() {
    const std::string cmd = std::string(test::kPython) + " " + test::source_dir() +
                            "/tests/reference/peft_reference.py --write-case " + dir.file("case");
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error(cmd + " failed");
    convert::ConvertedModel cm = convert::import_checkpoint(dir.file("case/base"), {});
    write_model_file(dir.file("base.brt"), cm.contents);
    const auto& c = j["case"];
    B = int(c["input_ids"].size()), T = int(c["input_ids"][0].size());
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        ids.push_back(c["input_ids"][b][t]);
        types.push_back(c["token_type_ids"][b][t]);
        mask.push_back(c["attention_mask"][b][t]);
      }
    for (const auto& l : c["labels"]) labels.push_back(l);
  }
  EncoderInputs inputs() const { return {B, T, ids.data(), types.data(), mask.data()}; }
  Targets targets() const {
    Targets t;
    t.labels = labels.data();
    return t;
  }
};

class PeftReference : public ::testing::TestWithParam<const char*> {};

TEST_P(PeftReference, LogitsMergedLogitsAndGradientsMatchPeft) {
  if (!test::have_torch()) GTEST_SKIP() << "python3-torch missing (peft_reference.py needs it)";
  Case c;
  const std::string variant = GetParam();
  const nlohmann::json& want = c.j["variants"][variant];
  LoadedModel m = load_model(c.dir.file("base.brt"));
  // Copied into the model's own arena as trainable parameters (as `bertrt merge` does), so that
  // the step below has gradients: a model running an adapter in place only infers.
  copy_adapter(m, *load_adapter(c.dir.file("case/" + variant), *m.model,
                                adapter_base_checksum(*m.model), c.dir.file("base.brt")));
  BertModel& model = *m.model;
  ASSERT_NE(model.lora(), nullptr);

  // The same weights as upstream read: each adapter tensor's sum (both in double, from float32).
  const float* p = model.params();
  for (const auto& [name, sum] : want["adapter_sums"].items()) {
    const ParamInfo* info = model.layout().find(name);
    ASSERT_NE(info, nullptr) << name;
    double s = 0;
    for (size_t i = 0; i < info->numel; ++i) s += p[info->offset + i];
    ASSERT_NEAR(s, sum.get<double>(), 1e-9 * (1 + std::abs(sum.get<double>())))
        << name << ": the case's weights differ from those the expected values were computed on";
  }
  size_t adapters = 0;
  for (const ParamInfo& q : model.layout().params())
    adapters += !model.is_base_param(q.name);
  EXPECT_EQ(adapters, want["adapter_sums"].size()) << "tensors the adapter carries";

  ReferenceBackend be;
  model.zero_grad();
  const ForwardResult r = model.forward(be, c.inputs(), c.targets(), true);
  const double logit_err = expect_logits(model.logits(), want["logits"], "logits with the adapter");
  double grad_err = 0;
  // PEFT's loss: BertForSequenceClassification's CrossEntropyLoss, the mean over the batch.
  EXPECT_NEAR(r.loss, want["loss"].get<double>(), 2e-6 * std::abs(want["loss"].get<double>()));
  if (want.contains("gradients")) {
    model.backward(be);
    const float* g = model.grads();
    for (const auto& [name, values] : want["gradients"].items()) {
      const ParamInfo* info = model.layout().find(name);
      ASSERT_NE(info, nullptr) << name;
      ASSERT_EQ(info->numel, values.size()) << name;
      const double s = scale_of(values);
      for (size_t i = 0; i < info->numel; ++i) {
        EXPECT_NEAR(g[info->offset + i], values[i].get<double>(), kGradTol * s)
            << name << " [" << i << "]";
        grad_err = std::max(grad_err, std::abs(g[info->offset + i] - values[i].get<double>()) / s);
      }
    }
    // Every trainable tensor has its gradient in the file, and nothing else trains.
    EXPECT_EQ(want["gradients"].size(), adapters);
  }

  model.merge_lora();
  model.forward(be, c.inputs(), Targets{}, false);
  const double merged_err = expect_logits(model.logits(), want["merged_logits"], "merged logits");
  std::printf("%s: largest differences relative to scale: logits %.2g, gradients %.2g, merged %.2g\n",
              variant.c_str(), logit_err, grad_err, merged_err);
}

INSTANTIATE_TEST_SUITE_P(Variants, PeftReference, ::testing::Values("list", "regex"));

TEST(PeftReferenceFile, RecordsTheUpstreamItCameFrom) {
  const nlohmann::json j = expected();
  EXPECT_EQ(j["versions"]["peft"], "0.11.1");
  EXPECT_EQ(j["sources"]["peft"], "207376de6282977844eae58e4a8afc6406d7751f");
  ASSERT_TRUE(j["variants"]["list"].contains("gradients"));
}

}  // namespace
}  // namespace bertrt
