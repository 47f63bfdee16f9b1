// Helpers shared by the `bertrt` subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "core/error.h"
#include "model/config.h"

namespace bertrt::cli {

// A flag's value, or a mix of flags, that can never work: exit 2 like CLI11's own usage errors,
// where errors met while running exit 1 (docs/reference/cli.md).
struct UsageError : Error {
  using Error::Error;
};
template <typename... Args>
[[noreturn]] void fail_usage(fmt::format_string<Args...> format, Args&&... args) {
  throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

// Fails (naming the flag) unless the folder that would hold `path` exists; run before long work
// so that a bad -o is reported at once, not after an hour of training.
void check_output_path(const std::string& flag, const std::string& path);
// Fails (naming both flags) where an output would write over an input or another output: the same
// path, or the same file (hard links). Pairs of {flag, path}; empty paths are skipped. A model
// that -o rewrites in place is fine (written atomically), so callers leave it out of `inputs`.
using FlagPaths = std::vector<std::pair<std::string, std::string>>;
void check_distinct_files(const FlagPaths& outputs, const FlagPaths& inputs);
// A CLI11 check that an integer option is ≥ lo, with a short message (CLI11's own number checks
// print ranges up to DBL_MAX in full).
CLI::Validator at_least(long long lo);
// A CLI11 check that a value is not empty: `--articles ""` would read as the default (all).
CLI::Validator not_empty(const std::string& expected);
// A CLI11 check for a 64-bit seed: digits only, at most 2^64 - 1 (CLI11 took -1 as 2^64 - 1 and
// clamped larger values to it).
CLI::Validator seed_value();
// Fails (naming the flag) unless `value` is finite and > 0 (or ≥ 0 when allow_zero).
void check_positive(const std::string& flag, double value, bool allow_zero = false);
// Fails (naming the flag) unless 3 ≤ value ≤ max_position_embeddings.
void check_max_seq_length(const std::string& flag, int value, int max_position_embeddings);
// Fails (naming the flag) unless `path` is an existing regular file.
void check_input_file(const std::string& flag, const std::string& path);

// Where a training run keeps its resumable checkpoint (model + optimizer moments + the run's
// state): beside -o, so that -o holds a finished model only. Written when the run is stopped
// (SIGINT/SIGTERM) and, in pretrain, every --save-steps steps; removed when the run finishes.
std::string resume_path(const std::string& out);
// " (its checkpoint is PATH.resume)" when `path` has no training state but PATH.resume exists
// (--resume given the -o of an interrupted run), else "".
std::string resume_hint(const std::string& path);
// Removes `out`.resume after a run that wrote `out` finished (it holds an older step of the same
// run); a note on stderr when it cannot.
void remove_resume_checkpoint(const std::string& out);

// --backend option (default "cpu") and its construction.
struct BackendChoice {
  std::string name = "cpu";
  int device = -1;  // --device: the Vulkan device (bertrt info --devices)
  int threads = 0;   // --threads: the cpu backend's thread count (0: BERTRT_NUM_THREADS or adaptive)
  bool spin = false; // --spin: its waits spin (BERTRT_SPIN)
  void add_to(CLI::App* app);
  // --device with a backend other than vulkan is an error (it would be ignored).
  std::unique_ptr<Backend> make() const;
  // For the commands that only run forwards of one loaded model (forward, eval, predict,
  // fill-mask, bench): a cpu backend is told its weights are constant
  // (CpuBackend::set_constant_weights), which lets it use XNNPACK; other backends as make().
  // Commands that train, or rewrite weights (quantize), use make().
  std::unique_ptr<Backend> make_inference() const;
};

// The config with Hugging Face config.json key names.
nlohmann::json config_json(const BertConfig& config);
// Reads `in` line by line (a trailing \r dropped; a line that is not UTF-8 is an error naming
// `source` and the line); calls fn(line, 1-based line number).
void for_each_line(std::istream& in, const std::string& source,
                   const std::function<void(const std::string&, size_t)>& fn);
// for_each_line over stdin, named "stdin".
void for_each_stdin_line(const std::function<void(const std::string&, size_t)>& fn);

// --no-verify-checksums on every subcommand that reads a .brt (skip the CRC-32C check of the tensor
// bytes: trusted files only). Call after the subcommands are registered.
void add_checksum_flag(CLI::App& app);

// Registration of each subcommand (one file each).
void add_init(CLI::App& app);
void add_info(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_forward(CLI::App& app);
void add_pretrain(CLI::App& app);
void add_finetune(CLI::App& app);
void add_eval(CLI::App& app);
void add_predict(CLI::App& app);
void add_fill_mask(CLI::App& app);
void add_plot(CLI::App& app);
void add_quantize(CLI::App& app);  // cmd_quantize.cpp: post-training int8 quantization
void add_merge(CLI::App& app);     // cmd_merge.cpp: a LoRA adapter folded into its base
void add_bench(CLI::App& app);     // cmd_bench.cpp: inference latency
void add_embed(CLI::App& app);     // cmd_embed.cpp: sentence embeddings
void add_rerank(CLI::App& app);    // cmd_rerank.cpp: cross-encoder scores
void add_search(CLI::App& app);    // cmd_search.cpp: semantic search over a corpus file
void add_serve(CLI::App& app);     // cmd_serve.cpp: the HTTP server

}  // namespace bertrt::cli
