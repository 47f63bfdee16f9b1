// bertrt bench: inference latency of a model file (fp32, fake-quant or int8) at a fixed batch and
// sequence length — what bench/int8_bench.sh prints side by side. Inputs are random ids (fixed
// seed) with no padding; the time is BertModel::forward (encoder, pooler and heads), no
// tokenization. A benchmark prints figures; nothing here asserts a speed.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>

#include "backends/cpu/blas_core.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/q8_gemm.h"
#include "common.h"
#include "core/error.h"
#include "io/model_io.h"

namespace bertrt::cli {

void add_bench(CLI::App& app) {
  struct Opts {
    std::string model;
    int batch_size = 1, seq_len = 0, iters = 20, warmup = 3;
    bool json = false, fp32 = false;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c =
      app.add_subcommand("bench", "inference latency of a model at a batch size and length");
  c->footer(
      "The line printed names what ran: the threads; the int8 kernel (of an int8 model's\n"
      "quantized matrix products); the fc provider, which runs the fully-connected (Linear)\n"
      "layers' fp32 matrix products (GEMMs) at inference: openblas, xnnpack, bertrt's own\n"
      "kernels, or auto (per shape), with how many Linear GEMMs each ran; the fp32 kernel of\n"
      "bertrt's own; and the OpenBLAS core of the other fp32 GEMMs. BERTRT_FC_PROVIDER,\n"
      "BERTRT_F32_KERNEL and BERTRT_Q8_KERNEL choose otherwise; `bertrt --version` prints this\n"
      "host's defaults.");
  c->add_option("--model", o->model, "model file (.brt)")->required();
  c->add_option("--batch-size", o->batch_size, "sequences per forward")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--seq-len", o->seq_len,
                "tokens per sequence (default 128, or the model's max_position_embeddings if "
                "fewer)")
      ->check(at_least(3));  // [CLS] A [SEP]
  c->add_option("--iters", o->iters, "timed forwards")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--warmup", o->warmup, "untimed forwards first")->capture_default_str()
      ->check(at_least(0));
  c->add_flag("--fp32", o->fp32, "run a quantized file's fp32 weights in fp32 (the baseline)");
  c->add_flag("--json", o->json, "one JSON object");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    LoadedModel m = load_model(o->model);
    BertModel& model = *m.model;
    if (o->fp32) model.disable_quantization();
    if (o->seq_len == 0) o->seq_len = std::min(128, model.config().max_position_embeddings);
    check_max_seq_length("--seq-len", o->seq_len, model.config().max_position_embeddings);
    const size_t n = size_t(o->batch_size) * o->seq_len;
    std::vector<int32_t> ids(n), types(n, 0), mask(n, 1);
    std::mt19937 rng(1234);
    // Ordinary word ids of BERT's vocabularies (past [unusedN] and the specials); a vocabulary of
    // at most 1,000 (a test model's) takes its whole range instead: the empty range [1000, V − 1]
    // recursed in libstdc++'s distribution until the stack overflowed (exit 139).
    const int vocab = model.config().vocab_size;
    std::uniform_int_distribution<int32_t> tok(vocab > 1000 ? 1000 : 0,
                                               std::min(29000, vocab - 1));
    for (auto& x : ids) x = tok(rng);
    const EncoderInputs in{o->batch_size, o->seq_len, ids.data(), types.data(), mask.data()};
    auto be = o->backend.make_inference();
    for (int i = 0; i < o->warmup; ++i) model.forward(*be, in, Targets{}, false);
    std::vector<double> ms;
    for (int i = 0; i < o->iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      model.forward(*be, in, Targets{}, false);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2], best = ms.front();
    const double mb = std::filesystem::file_size(o->model) / 1e6;
    const char* mode = quant_mode_name(model.quant_mode());
    // The cpu backend's u8×s8 kernel (BERTRT_Q8_KERNEL or the CPU's best): what an int8 row ran.
    const char* int8_kernel = cpu::q8_kernel_name(cpu::q8_best_kernel());
    // What the fp32 GEMMs ran on (OpenBLAS's core; blas_core.h).
    const std::string blas = cpu::blas_core_summary();
    // Which fully-connected provider ran the fp32 Linears (BERTRT_FC_PROVIDER; cpu_backend.h).
    const auto* cpu_be = dynamic_cast<const CpuBackend*>(be.get());
    const std::string fc = cpu_be ? cpu_be->fc_summary() : std::string("fc provider: n/a");
    if (o->json) {
      fmt::print("{}\n",
                 nlohmann::json{
                     {"model", o->model},
                     {"mode", mode},
                     {"file_mb", mb},
                     {"batch_size", o->batch_size},
                     {"seq_len", o->seq_len},
                     {"median_ms", median},
                     {"min_ms", best},
                     {"iters", o->iters},
                     {"threads", cpu_be ? cpu_be->num_threads() : 0},
                     // The pool's width at the end (lower while other programs held the cores).
                     {"threads_active", cpu_be ? cpu_be->thread_pool().active_threads() : 0},
                     {"threads_adaptive", cpu_be && cpu_be->thread_pool().adaptive()},
                     {"threads_spin", cpu_be && cpu_be->thread_pool().spin()},
                     {"int8_kernel", int8_kernel},
                     {"blas", blas},
                     {"fc_provider", cpu_be ? cpu::fc_provider_name(cpu_be->fc_provider()) : "n/a"},
                     {"fc_constant_weights", cpu_be && cpu_be->constant_weights()},
                     {"fc_xnnpack_calls", cpu_be ? cpu_be->fc_stats().xnnpack_calls : 0},
                     {"fc_bertrt_calls", cpu_be ? cpu_be->fc_stats().bertrt_calls : 0},
                     {"f32_kernel", cpu_be ? cpu::f32_kernel_name(cpu_be->f32_kernel()) : "n/a"},
                     {"fc_openblas_calls", cpu_be ? cpu_be->fc_stats().openblas_calls : 0}}
                     .dump());
      return;
    }
    fmt::print(
        "{} ({}, {:.2f} MB) B={} T={}: median {:.2f} ms, min {:.2f} ms over {} runs ({}; int8 "
        "kernel {}; {}; fp32 GEMM {})\n",
        o->model, mode, mb, o->batch_size, o->seq_len, median, best, o->iters,
        cpu_be ? fmt::format("{} thread{}", cpu_be->num_threads(), cpu_be->num_threads() == 1 ? "" : "s") : std::string(be->name()),
        int8_kernel, fc, blas);
  });
}

}  // namespace bertrt::cli
