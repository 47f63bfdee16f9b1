// `bertrt-convert`: checkpoints trained elsewhere → one .brt file, a .brt back to the Hugging Face
// layout, and a listing of any supported checkpoint. Exit codes: 0 ok, 1 error (one line naming
// the file and field), 2 usage error.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>

#include "backends/build_info.h"
#include "convert/convert_input.h"
#include "convert/export_hf.h"
#include "convert/export_peft.h"
#include "convert/export_st.h"
#include "convert/hf_import.h"
#include "convert/inspect.h"
#include "convert/tensor_encode.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "io/model_file.h"

namespace {

namespace fs = std::filesystem;
using namespace bertrt;
using namespace bertrt::convert;

struct Options {
  std::string input, output, to = "brt", dtype = "f32", vocab;
  bool inspect = false, json = false, drop_unknown = false, quiet = false,
       no_verify_checksums = false;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void warn(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) fmt::print(stderr, "bertrt-convert: warning: {}\n", w);
}

// Fails before any work when -o cannot be written (its folder is missing or not writable), where
// the write lands through symbolic links (as AtomicFile writes; a loop is an error).
void check_output_folder(const std::string& path) {
  try {
    check_writable(path);
  } catch (const Error& e) {
    fail("-o {}", e.what());
  }
  check_replaceable_brt("-o", path);  // -o sp/model.safetensors replaced the checkpoint
}

// Progress on a terminal for inputs worth waiting for.
std::function<void(uint64_t, uint64_t)> progress_printer(bool quiet) {
  if (quiet || !isatty(STDERR_FILENO)) return nullptr;
  return [last = -1](uint64_t done, uint64_t total) mutable {
    if (total < (64u << 20)) return;
    const int pct = static_cast<int>(100 * done / total);
    if (pct == last) return;
    last = pct;
    fmt::print(stderr, "\rconverting: {:3d}% of {:.0f} MB", pct, total / 1e6);
    if (done == total) fmt::print(stderr, "\n");
  };
}

// A .brt read and written again: what a file without checksums (written by an older bertrt) needs
// to load with them required. Everything is kept, the training state too; the loader's checks
// run first, so a file with damaged or hostile content is not blessed with fresh checksums.
int resave_brt(const Options& o) {
  if (o.dtype != "f32" || !o.vocab.empty())
    throw UsageError("re-saving a .brt keeps its dtypes and vocabulary: --dtype and --vocab apply "
                     "to checkpoints");
  check_output_folder(o.output);
  OpenOptions open;
  open.verify_checksums = default_verify_checksums();
  open.training_state = true;
  const ModelFile f = ModelFile::open(o.input, open);
  write_model_file(o.output, f.contents());
  if (!o.quiet)
    fmt::print("wrote {}: {} re-saved with checksums ({} tensors{})\n", o.output, o.input,
               f.contents().tensors.size(), f.has_training_state() ? " and the training state" : "");
  return 0;
}

int to_brt(const Options& o) {
  if (is_brt_file(o.input)) return resave_brt(o);
  const auto dtype = parse_float_dtype(o.dtype);
  check_output_folder(o.output);
  ConvertOptions opts;
  opts.dtype = *dtype;
  opts.vocab = o.vocab;
  opts.drop_unknown = o.drop_unknown;
  opts.progress = progress_printer(o.quiet);
  ConvertedModel m = import_checkpoint(o.input, opts);
  warn(m.warnings);
  write_model_file(o.output, m.contents);
  uint64_t bytes = 0;
  for (const TensorRecord& t : m.contents.tensors) bytes += t.nbytes;
  if (!o.quiet)
    fmt::print("wrote {}: {} ({} {}), {} tensors, {:.1f} MB of {} weights, vocab {}\n", o.output,
               m.contents.metadata["architecture"], m.contents.metadata["source_format"], o.input,
               m.contents.tensors.size(), bytes / 1e6, o.dtype, m.contents.tokenizer.vocab.size());
  return 0;
}

int to_folder(const Options& o) {
  if (o.dtype != "f32")
    throw UsageError("--dtype applies to conversions into .brt, not --to " + o.to);
  if (!o.vocab.empty())
    throw UsageError("--vocab applies to conversions into .brt; --to hf and sentence-transformers write the .brt's own "
                     "vocabulary");
  if (o.to == "peft") {
    warn(export_peft(o.input, o.output));
    if (!o.quiet)
      fmt::print("wrote {}/: adapter_config.json, adapter_model.safetensors (a PEFT LoRA "
                 "adapter)\n", o.output);
  } else if (o.to == "hf") {
    warn(export_hf(o.input, o.output));
    if (!o.quiet)
      fmt::print("wrote {}/: config.json, model.safetensors, vocab.txt, tokenizer_config.json, "
                 "special_tokens_map.json\n", o.output);
  } else {
    warn(export_sentence_transformers(o.input, o.output));
    if (!o.quiet)
      fmt::print("wrote {}/: a sentence-transformers folder (modules.json, the Transformer's "
                 "Hugging Face files, 1_Pooling/ and the Dense and Normalize modules)\n",
                 o.output);
  }
  return 0;
}

int run(const Options& o) {
  if (o.inspect) {
    if (!o.output.empty()) throw UsageError("--inspect prints to stdout; it takes no -o");
    if (o.dtype != "f32" || !o.vocab.empty() || o.to != "brt")
      throw UsageError(
          "--inspect lists the tensors as stored; it takes no --dtype, --vocab or --to");
    const Inspection in = inspect_path(o.input);
    fmt::print("{}", o.json ? inspection_json(in) : inspection_text(in));
    return 0;
  }
  if (o.json) throw UsageError("--json goes with --inspect");
  if (o.output.empty()) throw UsageError("-o is required (the .brt file, or the folder with --to hf, sentence-transformers or peft)");
  if (o.to == "brt") return to_brt(o);
  return to_folder(o);
}

}  // namespace

int main(int argc, char** argv) {
  // Past RLIMIT_FSIZE (ulimit -f) the kernel sends SIGXFSZ, whose default action kills the process
  // before AtomicFile can remove its temp file; ignored, write() fails with EFBIG and the error
  // path cleans up like any other write error.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{
      "bertrt-convert: BERT checkpoints trained elsewhere -> one .brt model file, and back.\n\n"
      "  bertrt-convert INPUT -o OUT.brt [--dtype f32|f16|bf16]\n"
      "      INPUT: a Hugging Face folder (config.json + model.safetensors | model.safetensors.index.json\n"
      "      | pytorch_model.bin (zip or legacy) | pytorch_model.bin.index.json, vocab.txt,\n"
      "      tokenizer_config.json), one of those weight files, or an original TF1 BERT folder\n"
      "      (bert_config.json + bert_model.ckpt.index/.data-*, vocab.txt), or a\n"
      "      sentence-transformers folder (modules.json: Transformer, Pooling, Dense,\n"
      "      Normalize; the embedding head and prompts are kept for `bertrt embed`).\n"
      "  bertrt-convert MODEL.brt -o NEW.brt\n"
      "      writes the .brt again, with checksums (for a file an older bertrt wrote without:\n"
      "      add --no-verify-checksums if you trust it).\n"
      "  bertrt-convert --to hf MODEL.brt -o DIR\n"
      "      writes config.json, model.safetensors, vocab.txt, tokenizer_config.json that\n"
      "      transformers' from_pretrained(DIR) loads; f32 weights are copied bit for bit.\n"
      "  bertrt-convert --to sentence-transformers MODEL.brt -o DIR\n"
      "      the same plus modules.json, 1_Pooling/, the Dense and Normalize modules and the\n"
      "      prompts: a folder SentenceTransformer(DIR) loads (a model with an embedding head).\n"
      "  bertrt-convert --to peft ADAPTER.brt -o DIR\n"
      "      a LoRA adapter (`bertrt finetune --lora-r`) as a Hugging Face PEFT folder:\n"
      "      adapter_config.json + adapter_model.safetensors, which PeftModel.from_pretrained\n"
      "      loads over the base exported with --to hf. Given a PEFT folder whose weights are\n"
      "      adapter_model.bin, writes it again with adapter_model.safetensors (what --adapter\n"
      "      reads).\n"
      "  bertrt-convert --inspect PATH [--json]\n"
      "      lists name, dtype, shape and bytes of every tensor of any input above or a .brt.\n\n"
      "Exit status: 0 ok, 1 error, 2 usage error. Errors print one line, \"bertrt-convert: error:\n"
      "...\", naming the file and the field, or the flag.",
      "bertrt-convert"};  // the usage line's name, whatever argv[0] is
  Options o;
  app.add_option("input", o.input,
                 "Checkpoint folder or file (with --to hf or sentence-transformers: the .brt "
                 "model; with --to peft: the adapter .brt or a PEFT folder)")
      ->required();
  app.add_option("-o,--output", o.output,
                 "Output .brt file, or the folder to write with --to hf, sentence-transformers or "
                 "peft");
  app.add_option("--to", o.to,
                 "Output format: brt (default), hf (Hugging Face folder from a .brt), "
                 "sentence-transformers (its folder, from a .brt with an embedding head) or peft "
                 "(a PEFT LoRA folder, from an adapter .brt)")
      ->check(CLI::IsMember({"brt", "hf", "sentence-transformers", "peft"}));
  app.add_option("--dtype", o.dtype,
                 "Storage dtype of the weights in the .brt: f32 (default; exact), f16 or bf16 (half the size; "
                 "rounded to nearest even)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--vocab", o.vocab, "vocab.txt to use when the folder has none (or to replace it)")
      ->check(CLI::ExistingFile);
  app.add_flag("--drop-unknown", o.drop_unknown,
               "Drop tensors the architecture does not use (with a warning) instead of failing");
  app.add_flag("--inspect", o.inspect, "List the tensors of INPUT (name, dtype, shape, bytes); writes nothing");
  app.add_flag("--json", o.json, "With --inspect: print JSON");
  app.add_flag("-q,--quiet", o.quiet,
               "No summary line or progress (warnings and errors still go to stderr)");
  app.add_flag("--no-verify-checksums", o.no_verify_checksums,
               "Reading a .brt (--to hf, --inspect, re-saving): skip the CRC-32C checks and accept "
               "a file without checksums (trusted files only; also BERTRT_VERIFY_CHECKSUMS=0)");
  app.set_version_flag(
      "--version",
      [] {
        std::string s = bertrt::version_text("bertrt-convert");
        s.pop_back();  // CLI11 ends the line
        return s;
      },
      "Print the version, the git commit, the backends built in and the CPU kernels this host "
      "runs, and exit");
  try {
    app.parse(argc, argv);
    if (o.no_verify_checksums) set_default_verify_checksums(false);
    return run(o);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Usage errors as `bertrt` prints them: "bertrt-convert: error: ...", exit 2.
    fmt::print(stderr, "bertrt-convert: error: {}\nRun with --help for more information.\n",
               e.what());
    return 2;
  } catch (const UsageError& e) {
    fmt::print(stderr, "bertrt-convert: error: {}\nRun with --help for more information.\n",
               e.what());
    return 2;
  } catch (const bertrt::Error& e) {
    fmt::print(stderr, "bertrt-convert: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "bertrt-convert: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {  // std::filesystem errors and the like: still one line
    fmt::print(stderr, "bertrt-convert: error: {}\n", e.what());
    return 1;
  }
}
