// Contrastive training against sentence-transformers itself: the losses and every parameter's
// gradient that the library computed on tests/reference/st_models.py's folders
// (expected/sentence_transformers_losses.json, written by st_losses.py), recomputed by bertrt on
// the same folders converted in-process. Gradients are compared through the file's fingerprints
// (L2 norm, sum and two pseudo-random projections of each tensor's gradient; its "fingerprint"
// entry gives the recipe) and the full gradient of one tensor.
//
// Tolerances: both sides are float32 through the encoder's forward and backward (two layers over
// 36-wide rows, sums of at most 37 terms) and differ in summation order; bertrt's loss runs in
// double. A gradient field is compared relative to its Cauchy–Schwarz scale (l2, l2·√n,
// l2·‖v‖); 1e-4 of that scale (≈ 800 float32 ulps) bounds the worst case of the longer backward
// chain (the differences seen are 25× smaller, 4.3e-6), and a real mistake (a wrong mask, a
// missed scale or normalization) moves fields by 1e-2 and more.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convert/hf_import.h"
#include "io/model_file.h"
#include "io/model_io.h"
#include "test_util.h"
#include "train/cached_mnrl.h"
#include "train/embedding_trainer.h"
#include "train/reranker_trainer.h"
#include "embed/embedder.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;
constexpr double kTol = 1e-4;

uint32_t crc32_ieee(const std::string& s) {  // zlib's CRC-32
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

uint32_t fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

double v(const std::string& name, size_t i, uint32_t k) {
  const uint32_t x = uint32_t(i) * 2654435761u + crc32_ieee(name) + k;
  return double(fmix32(x)) / 4294967296.0 - 0.5;
}

TEST(StTrainingReference, FingerprintGeneratorMatchesTheFile) {
  const auto j = nlohmann::json::parse(
      std::ifstream(test::source_dir() + "/tests/reference/expected/sentence_transformers_losses.json"));
  const auto& ex = j["fingerprint"]["example"];
  const std::string name = ex["name"];
  EXPECT_EQ(crc32_ieee(name), ex["crc32"].get<uint32_t>());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(v(name, i, 0), ex["v0[0:4]"][i].get<double>());
    EXPECT_EQ(v(name, i, 1), ex["v1[0:4]"][i].get<double>());
  }
}

// The file's gradients of one loss (`want`: gradients, untouched, rounding_only, full) against
// model.grads(); counts the fingerprints checked and the worst field error.
void check_gradients(const nlohmann::json& want, BertModel& model, const std::string& id,
                     int& checked, double& worst) {
  const float* g = model.grads();
  const ParamLayout& layout = model.layout();
  for (const auto& [name, fp] : want["gradients"].items()) {
    const ParamInfo& p = layout.at(name);
    double l2 = 0, sum = 0, d0 = 0, d1 = 0, n0 = 0, n1 = 0;
    for (size_t i = 0; i < p.numel; ++i) {
      const double x = g[p.offset + i];
      l2 += x * x, sum += x;
      d0 += x * v(name, i, 0), d1 += x * v(name, i, 1);
      n0 += v(name, i, 0) * v(name, i, 0), n1 += v(name, i, 1) * v(name, i, 1);
    }
    l2 = std::sqrt(l2);
    const double L = fp[0].get<double>();
    const double errs[] = {std::abs(l2 - L) / L,
                           std::abs(sum - fp[1].get<double>()) / (L * std::sqrt(double(p.numel))),
                           std::abs(d0 - fp[2].get<double>()) / (L * std::sqrt(n0)),
                           std::abs(d1 - fp[3].get<double>()) / (L * std::sqrt(n1))};
    for (int f = 0; f < 4; ++f) {
      worst = std::max(worst, errs[f]);
      EXPECT_LT(errs[f], kTol) << id << " " << name << " field " << f;
    }
    ++checked;
  }
  for (const auto& name : want["untouched"]) {  // the pooler: not on the embedding's path
    const ParamInfo& p = layout.at(name.get<std::string>());
    for (size_t i = 0; i < p.numel; ++i) ASSERT_EQ(g[p.offset + i], 0.0f) << id << " " << name;
  }
  for (const auto& [name, largest] : want["rounding_only"].items()) {  // zero in exact arithmetic
    const ParamInfo& p = layout.at(name);
    for (size_t i = 0; i < p.numel; ++i)
      EXPECT_LT(std::abs(g[p.offset + i]), 1e-6) << id << " " << name << " [" << i << "]";
    (void)largest;
  }
  for (const auto& [key, values] : want["full"].items()) {
    // "name" (the whole tensor) or "name[r]" (row r of a matrix).
    const size_t bracket = key.find('[');
    const std::string name = key.substr(0, bracket);
    const ParamInfo& p = layout.at(name);
    const size_t row = bracket == std::string::npos ? 0 : std::stoul(key.substr(bracket + 1));
    const size_t start = row * (p.shape.size() == 2 ? size_t(p.shape[1]) : 0);
    double scale = 0;
    for (const auto& x : values) scale = std::max(scale, std::abs(x.get<double>()));
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(g[p.offset + start + i], values[i].get<double>(), kTol * scale) << id << " " << key;
  }
}

struct Variant : ::testing::TestWithParam<const char*> {};

TEST_P(Variant, LossesAndGradientsMatchSentenceTransformers) {
  if (!test::have_torch()) GTEST_SKIP() << "python3-torch missing (st_models.py needs it)";
  const std::string variant = GetParam();
  test::TempDir dir;
  const std::string cmd = std::string(test::kPython) + " " + test::source_dir() +
                          "/tests/reference/st_models.py --out " + dir.file("st") + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  convert::ConvertedModel cm = convert::import_checkpoint(dir.file("st/" + variant), {});
  write_model_file(dir.file("m.brt"), cm.contents);
  LoadedModel m = load_model(dir.file("m.brt"));
  auto be = make_backend("cpu");
  const auto j = nlohmann::json::parse(
      std::ifstream(test::source_dir() + "/tests/reference/expected/sentence_transformers_losses.json"));
  const auto& expected = j["variants"][variant];
  int checked = 0;
  double worst = 0;
  for (const auto& [id, want] : expected["losses"].items()) {
    const auto& spec = j["losses"][id];
    EmbeddingLoss loss;
    if (id == "CoSENTLoss") loss.kind = EmbeddingLossKind::kCosent;
    if (id == "CosineSimilarityLoss") loss.kind = EmbeddingLossKind::kCosine;
    if (id == "MatryoshkaLoss") loss.matryoshka_dims = expected["matryoshka_dims"].get<std::vector<int>>();
    if (id == "CachedMultipleNegativesRankingLoss") {  // its mini_batch_size, as the call gives it
      const std::string call = spec["call"];
      const size_t at = call.find("mini_batch_size=");
      ASSERT_NE(at, std::string::npos) << call;
      loss.mini_batch_size = std::stoi(call.substr(at + 16));
    }
    std::vector<PairRow> rows;
    const auto& texts = spec["texts"];
    for (size_t i = 0; i < texts[0].size(); ++i) {
      PairRow r;
      for (const auto& col : texts) r.texts.push_back(col[i]);
      if (loss.needs_labels()) r.score = spec["labels"][i].get<double>();
      rows.push_back(std::move(r));
    }
    BertModel& model = *m.model;
    model.zero_grad();
    const double value =
        loss.mini_batch_size > 0
            ? cached_mnrl_forward_backward(model, *m.tokenizer, *be, loss, rows, loss.mini_batch_size)
            : embedding_forward_backward(model, *m.tokenizer, *be, loss, rows);
    const double want_loss = want["loss"].get<double>();
    EXPECT_NEAR(value, want_loss, kTol * std::max(1.0, std::abs(want_loss))) << id;
    check_gradients(want, model, id, checked, worst);
  }
  EXPECT_GT(checked, 100);
  std::printf("%s: %d gradient fingerprints, worst %.2g of their scale\n", variant.c_str(), checked,
              worst);
}

INSTANTIATE_TEST_SUITE_P(Folders, Variant, ::testing::Values("pool_mean", "dense_normalize"));

// `finetune --task reranker`'s step against CrossEncoder.fit's BCEWithLogitsLoss on the
// cross_encoder folder: the input ids, the loss and every parameter's gradient (the pooler and
// the classifier included), with the tolerances above.
TEST(StTrainingReference, RerankerMatchesCrossEncoderFit) {
  if (!test::have_torch()) GTEST_SKIP() << "python3-torch missing (st_models.py needs it)";
  test::TempDir dir;
  const std::string cmd = std::string(test::kPython) + " " + test::source_dir() +
                          "/tests/reference/st_models.py --out " + dir.file("st") + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  convert::ConvertedModel cm = convert::import_checkpoint(dir.file("st/cross_encoder"), {});
  write_model_file(dir.file("m.brt"), cm.contents);
  LoadedModel m = load_model(dir.file("m.brt"));
  auto be = make_backend("cpu");
  const auto j = nlohmann::json::parse(
      std::ifstream(test::source_dir() + "/tests/reference/expected/sentence_transformers_losses.json"));
  const auto& want = j["cross_encoder"];
  std::vector<PairRow> rows;
  for (size_t i = 0; i < want["query"].size(); ++i) {
    rows.push_back(PairRow{{want["query"][i], want["passage"][i]}, want["labels"][i].get<double>()});
    const Encoding e = m.tokenizer->encode(rows.back().texts[0], rows.back().texts[1]);
    EXPECT_EQ(e.input_ids, want["input_ids"][i].get<std::vector<int32_t>>()) << i;
  }
  BertModel& model = *m.model;
  model.zero_grad();
  const int max_len = tokenizer_max_length(m.metadata, model.config().max_position_embeddings);
  const double value = reranker_forward_backward(model, *m.tokenizer, *be, rows, max_len);
  EXPECT_NEAR(value, want["loss"].get<double>(), kTol * std::max(1.0, want["loss"].get<double>()));
  int checked = 0;
  double worst = 0;
  check_gradients(want, model, "BCEWithLogitsLoss", checked, worst);
  EXPECT_EQ(checked, int(want["gradients"].size()));
  EXPECT_GT(checked, 30);
  std::printf("cross_encoder: %d gradient fingerprints, worst %.2g of their scale\n", checked, worst);
}

}  // namespace
}  // namespace bertrt
