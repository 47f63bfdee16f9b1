// Quantization-aware training of a whole (tiny) BERT against PyTorch's QAT: tests/reference/
// qat_reference.py runs at test time (/usr/bin/python3 with torch) and writes the torch.ao
// FakeQuantize version of bert_reference.py's model (every Linear's input: quint8 [0, 255]
// MovingAverageMinMaxObserver; every Linear weight and the tied decoder's: per-channel symmetric
// [-127, 127] recomputed each forward; int8 embeddings or not), in float32, over 3 training
// forwards with clip + AdamW between them and the observers frozen after forward 2. Compared here,
// on both backends: every loss, every parameter gradient of forwards 1 and 3, every observer range
// after each forward, and every parameter after the 2 AdamW steps.
// Skipped (visibly) when python3 or torch is missing, unless BERTRT_REQUIRE_DATA=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "io/safetensors.h"
#include "model/bert_model.h"
#include "reference_model.h"
#include "test_util.h"

namespace bertrt {
namespace {

// Tolerances. Both sides run float32 with the same fake-quant rounding rules (bit-exact per op,
// quant_torch_test), but GEMM and reduction orders differ (OpenBLAS / our loops vs ATen), so values
// differ by float32 rounding, ~1e-6 relative after two layers. Where a value lies within that
// rounding of a midpoint between two codes, the sides can pick adjacent codes, and that element
// then differs by one quantization step (≈ range/255); that is the only source of a larger gap.
// Measured over both backends and both embedding modes: losses ≤ 1.2e-7 relative, observer
// ranges ≤ 2.4e-7, gradients ≤ 7.2e-5 of each tensor's largest (floor: 1e-3 of the largest
// gradient of the model, for tensors that are nearly zero), parameters after 2 AdamW steps ≤ 5e-4
// absolute with 0.3% of them beyond 1e-5 (Adam normalises each step by √v, so a weight whose
// gradient is small and known to fewer digits moves by up to lr = 1e-3 differently). The limits
// leave ~10× headroom yet fail on any rule change: fake-quantizing the embeddings or not moves the
// loss by 4e-3, an observer momentum of 0.01 instead of 0.1 moves the step-2 ranges by ≥ 1e-3.
constexpr double kLossTol = 1e-5;
constexpr double kGradTol = 1e-3;
constexpr double kRangeTol = 1e-5;
constexpr double kParamAbsTol = 2e-3;  // 2·lr
constexpr double kParamLooseShare = 0.01;

class QatReference : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  static void SetUpTestSuite() {
    const std::string py = test::kPython;
    if (!test::have_torch()) {
      skip_reason_ = new std::string("python3 with torch is missing (" + py + ")");
      return;
    }
    dir_ = new test::TempDir();
    for (int emb : {0, 1}) {
      const std::string out = dir_->file("qat" + std::to_string(emb) + ".safetensors");
      // ATEN_CPU_CAPABILITY=default: torch's scalar kernels on every host. Fake-quant is a step
      // function, and with its AVX2/AVX-512 kernels (chosen by the host: seen on an AVX-512 AMD
      // EPYC) torch's float32 sums put one activation on the other side of a rounding tie, one
      // quantization step away; the expected values must not depend on the host's SIMD.
      const std::string cmd = "ATEN_CPU_CAPABILITY=default " + py + " " + test::source_dir() +
                              "/tests/reference/qat_reference.py --int8-embeddings " +
                              std::to_string(emb) + " --momentum 0.1 --freeze 2 --out " + out +
                              " > " + dir_->file("log.txt") + " 2>&1";
      if (std::system(cmd.c_str()) != 0) {
        skip_reason_ = new std::string("qat_reference.py failed: " + cmd);
        return;
      }
      files_[emb] = new SafetensorsFile(SafetensorsFile::open(out));
    }
  }
  static void TearDownTestSuite() {
    for (auto& f : files_) delete f, f = nullptr;
    delete dir_;
    delete skip_reason_;
    dir_ = nullptr;
    skip_reason_ = nullptr;
  }
  void SetUp() override {
    if (files_[0] && files_[1]) return;
    const char* req = std::getenv("BERTRT_REQUIRE_DATA");
    if (req && std::string(req) == "1") FAIL() << *skip_reason_;
    GTEST_SKIP() << *skip_reason_;
  }
  static inline SafetensorsFile* files_[2] = {nullptr, nullptr};
  static inline test::TempDir* dir_ = nullptr;
  static inline std::string* skip_reason_ = nullptr;
};

std::vector<int32_t> ints(const SafetensorsFile& f, const std::string& name) {
  auto v = f.to_i64(name);
  return std::vector<int32_t>(v.begin(), v.end());
}

// max |got − want| / max |want| over a tensor, with the worst element on failure.
void expect_rel(const std::string& what, const float* got, const std::vector<float>& want,
                double tol, double floor) {
  EXPECT_TRUE(test::rel_close(got, want, tol, floor)) << what;
}

void expect_grads(BertModel& model, const SafetensorsFile& f, const std::string& step) {
  double scale = 0;
  for (const ParamInfo& p : model.layout().params())
    for (float g : f.to_f32(step + "/grad/" + p.name))
      scale = std::max(scale, std::fabs(double(g)));
  for (const ParamInfo& p : model.layout().params())
    expect_rel(step + " grad " + p.name, model.grads() + p.offset,
               f.to_f32(step + "/grad/" + p.name), kGradTol, 1e-3 * scale);
}

void expect_observers(BertModel& model, const SafetensorsFile& f, const std::string& step) {
  const auto& linears = model.quant()->linears();
  size_t n = 0;
  for (const auto& t : f.tensors()) n += t.name.rfind(step + "/observer/", 0) == 0;
  ASSERT_EQ(n, linears.size()) << "every Linear of the reference has an observer here";
  for (const auto& [name, q] : linears) {
    const auto want = f.to_f32(step + "/observer/" + name);
    const float got[2] = {q.observer.min(), q.observer.max()};
    expect_rel(step + " observer " + name, got, want, kRangeTol, 1e-30);
  }
}

TEST_P(QatReference, ThreeForwardsTwoAdamWStepsAndFreeze) {
  const auto& [backend_name, int8_embeddings] = GetParam();
  const SafetensorsFile& f = *files_[int8_embeddings ? 1 : 0];
  BertModel model(test::reference_config(f), test::reference_pretraining_heads(f));
  test::load_reference_params(model, f);
  QatConfig qc;
  qc.observer_momentum = std::stof(f.metadata().at("momentum"));
  qc.freeze_observers_steps = std::stoi(f.metadata().at("freeze"));
  qc.int8_embeddings = int8_embeddings;
  model.enable_qat(qc);

  const auto input_ids = ints(f, "input/input_ids"),
             token_type_ids = ints(f, "input/token_type_ids"),
             attention_mask = ints(f, "input/attention_mask"),
             positions = ints(f, "input/mlm_positions"), mlm_labels = ints(f, "input/mlm_labels"),
             nsp_labels = ints(f, "input/nsp_labels"), labels = ints(f, "input/labels");
  const auto shape = f.at("input/input_ids").shape;
  EncoderInputs in{int(shape[0]), int(shape[1]), input_ids.data(), token_type_ids.data(),
                   attention_mask.data()};
  Targets targets{positions.data(), mlm_labels.data(), int(positions.size()), nsp_labels.data(),
                  labels.data()};
  auto be = make_backend(backend_name);
  std::vector<float> m(model.layout().total()), v(model.layout().total());
  for (int step = 1; step <= 3; ++step) {
    const std::string s = "step" + std::to_string(step);
    model.grads();
    model.zero_grad();
    const double loss = model.forward(*be, in, targets, /*training=*/true).loss;
    model.backward(*be);
    const double want = f.to_f32(s + "/loss")[0];
    EXPECT_NEAR(loss, want, kLossTol * want) << s;
    expect_observers(model, f, s);
    if (step != 2) expect_grads(model, f, s);
    if (step == 3) break;
    // clip_grad_norm_(1.0) + AdamW(lr 1e-3, wd 0.01 except LayerNorm/bias), as the reference.
    double sq = 0;
    for (size_t i = 0; i < model.layout().total(); ++i)
      sq += double(model.grads()[i]) * model.grads()[i];
    const double coef = 1.0 / (std::sqrt(sq) + 1e-6);
    for (const ParamInfo& p : model.layout().params()) {
      float* g = model.grads() + p.offset;
      if (coef < 1)
        for (size_t i = 0; i < p.numel; ++i) g[i] = float(g[i] * coef);
      AdamWHyper h;
      h.weight_decay = p.decay ? 0.01f : 0.0f;
      be->adamw_step(model.params() + p.offset, m.data() + p.offset, v.data() + p.offset, g,
                     p.numel, h, step);
    }
    if (step == 2) {
      size_t total = 0, loose = 0;
      for (const ParamInfo& p : model.layout().params()) {
        const auto want_p = f.to_f32("final/param/" + p.name);
        for (size_t i = 0; i < p.numel; ++i) {
          const double d = std::fabs(double(model.params()[p.offset + i]) - want_p[i]);
          EXPECT_LE(d, kParamAbsTol) << p.name << "[" << i << "]";
          loose += d > 1e-5;
          ++total;
        }
      }
      // A weight off by more than fp32 noise needs a small, imprecise gradient (see above).
      EXPECT_LE(double(loose), kParamLooseShare * total)
          << loose << " of " << total << " parameters";
    }
  }
  // Frozen after forward 2: forward 3 left every range where forward 2 put it.
  EXPECT_TRUE(model.quant()->observers_frozen());
}

INSTANTIATE_TEST_SUITE_P(Backends, QatReference,
                         ::testing::Combine(::testing::Values("reference", "cpu"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param)
                                                                 ? "_int8_embeddings"
                                                                 : "_float_embeddings");
                         });

}  // namespace
}  // namespace bertrt
