#include "common.h"

#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "backends/cpu/cpu_backend.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/utf8.h"
#include "io/model_file.h"

namespace bertrt::cli {

namespace fs = std::filesystem;

void check_output_path(const std::string& flag, const std::string& path) {
  if (path.empty()) fail("{}: an output path is required", flag);
  try {  // found now rather than after hours of training
    check_writable(path);
  } catch (const Error& e) {
    fail("{} {}", flag, e.what());
  }
}

namespace {

// The file a path names once its links are followed (a dangling link: the file it would create).
fs::path resolved(const std::string& path, std::error_code& ec) {
  std::string target = path;
  try {
    target = output_target(path);
  } catch (const Error&) {  // a loop: compared as written (check_output_path reports it)
  }
  // Absolute first: weakly_canonical leaves a relative path none of whose parts exist as it is,
  // so "X.brt" and "./X.brt" (both still to be written) compared unequal.
  return fs::weakly_canonical(fs::absolute(target, ec), ec);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code e1, e2;
  if (fs::equivalent(a, b, e1) && !e1) return true;  // both exist: same inode
  const fs::path ca = resolved(a, e1), cb = resolved(b, e2);
  return !e1 && !e2 && ca == cb;
}

}  // namespace

void check_distinct_files(const FlagPaths& outputs, const FlagPaths& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    for (const auto& [in_flag, in_path] : inputs)
      if (!in_path.empty() && same_file(path, in_path))
        fail("{} {}: is also {}: the output would overwrite that input", flag, path, in_flag);
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[j].second.empty() && same_file(path, outputs[j].second))
        fail("{} {}: is also {}: give the two outputs different files", flag, path,
             outputs[j].first);
  }
}

std::string resume_path(const std::string& out) { return out + ".resume"; }

std::string resume_hint(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(resume_path(path), ec)
             ? fmt::format(" (the interrupted run's checkpoint is {}: --resume {})",
                           resume_path(path), resume_path(path))
             : "";
}

void remove_resume_checkpoint(const std::string& out) {
  std::error_code ec;
  const std::string path = resume_path(out);
  if (fs::symlink_status(path, ec).type() != fs::file_type::regular) return;
  if (!fs::remove(path, ec) && ec)
    fmt::print(stderr, "bertrt: note: could not remove the checkpoint {} of this finished run: {}\n",
               path, ec.message());
}

CLI::Validator not_empty(const std::string& expected) {
  return CLI::Validator(
      [expected](std::string& s) -> std::string {
        return s.empty() ? fmt::format("expected {}, got an empty value", expected) : "";
      },
      "", "not empty");
}

CLI::Validator at_least(long long lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (end == s.c_str() || *end != '\0' || errno != 0)
          return fmt::format("expected an integer ≥ {}, got '{}'", lo, s);
        if (v < lo) return fmt::format("must be ≥ {}, got {}", lo, v);
        return {};
      },
      "", "at least " + std::to_string(lo));
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        if (digits) std::strtoull(s.c_str(), nullptr, 10);
        if (!digits || errno == ERANGE)
          return fmt::format("expected an integer from 0 to 18446744073709551615, got '{}'", s);
        return {};
      },
      "", "seed");
}

void check_positive(const std::string& flag, double value, bool allow_zero) {
  if (!std::isfinite(value) || value < 0 || (!allow_zero && value == 0))
    fail_usage("{} must be a finite number {} 0, got {}{}", flag, allow_zero ? "≥" : ">", value,
               std::isinf(value) ? " (or a number past float's ±3.4e38)" : "");
}

void check_max_seq_length(const std::string& flag, int value, int max_position_embeddings) {
  if (value < 3) fail_usage("{} must be ≥ 3 ([CLS] A [SEP]), got {}", flag, value);
  if (value > max_position_embeddings)
    fail_usage("{} {} exceeds the model's max_position_embeddings {}", flag, value,
               max_position_embeddings);
}

void check_input_file(const std::string& flag, const std::string& path) {
  if (!fs::exists(path)) fail("{} {}: no such file", flag, path);
  if (!fs::is_regular_file(path)) fail("{} {}: not a regular file", flag, path);
}

void for_each_line(std::istream& in, const std::string& source,
                   const std::function<void(const std::string&, size_t)>& fn) {
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // As the data files: bytes that are not UTF-8 would be dropped by the tokenizer (and broke
    // --json's output of NER and SQuAD lines).
    check_utf8_line(line, source, ++n);
    fn(line, n);
  }
  if (in.bad()) fail("{}: read error after line {}", source, n);
}

void for_each_stdin_line(const std::function<void(const std::string&, size_t)>& fn) {
  for_each_line(std::cin, "stdin", fn);
}

void add_checksum_flag(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({})) {
    const std::string name = sub->get_name();
    if (name == "init" || name == "plot") continue;  // they read no .brt
    // Triggered while parsing, so the setting is in place before the subcommand's callback runs.
    sub->add_flag_callback(
           "--no-verify-checksums", [] { set_default_verify_checksums(false); },
           "skip the CRC-32C checks on load and accept a file without checksums (trusted files "
           "only; the values are still checked; also BERTRT_VERIFY_CHECKSUMS=0)")
        ->trigger_on_parse();
  }
}

void BackendChoice::add_to(CLI::App* app) {
  app->add_option("--backend", name,
                  "compute backend: cpu (OpenBLAS), vulkan (GPU: every op on the device), "
                  "reference (scalar) or checked (the cpu backend behind the GPU memory "
                  "contract's checks: for testing)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {  // a usage error (exit 2), as other bad values
            const std::vector<std::string> names = backend_names();
            if (std::find(names.begin(), names.end(), s) != names.end()) return {};
            return fmt::format("unknown backend '{}': expected one of {}", s,
                               fmt::join(names, ", "));
          },
          "", "backend"));
  app->add_option("--device", device,
                  "Vulkan device index for --backend vulkan (bertrt info --devices; default "
                  "BERTRT_VULKAN_DEVICE or 0)")
      ->check(at_least(0));
  app->add_option("--threads", threads,
                  "cpu backend threads, fixed (capped at the usable cores; default "
                  "BERTRT_NUM_THREADS, else every usable core, fewer while other programs keep "
                  "them busy)")
      ->check(at_least(1));
  app->add_flag("--spin", spin,
                "cpu backend: its threads spin while they wait instead of sleeping, for cores "
                "that run nothing else (also BERTRT_SPIN=1)");
}

std::unique_ptr<Backend> BackendChoice::make() const {
  // Before the backend exists: its pool reads them when it is made.
  if (threads > 0 || spin) cpu::set_thread_overrides(threads, spin);
  if (device >= 0 && name != "vulkan")
    fail_usage("--device {} selects a Vulkan device: it needs --backend vulkan (the backend is {})",
               device, name);
  return make_backend(name, device);
}

std::unique_ptr<Backend> BackendChoice::make_inference() const {
  auto be = make();
  if (auto* cpu_be = dynamic_cast<CpuBackend*>(be.get())) cpu_be->set_constant_weights(true);
  return be;
}

}  // namespace bertrt::cli
