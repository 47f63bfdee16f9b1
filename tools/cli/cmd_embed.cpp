// bertrt embed: sentence embeddings of the lines of a file or stdin (embed/embedder.h), as JSON
// lines or one .npy matrix.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "common.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "embedding_output.h"
#include "io/model_io.h"
#include "lora_flags.h"

namespace bertrt::cli {

namespace {

// Lines handed to the model at a time: JSON output streams, memory stays bounded.
constexpr size_t kChunk = 1024;

}  // namespace

void add_embed(CLI::App& app) {
  struct Opts {
    std::string model, adapter, input, output, prompt_name, pooling, precision = "float32", calibration;
    std::optional<std::string> prompt;
    int dimensions = 0, batch_size = 32, max_batch_tokens = 2048;
    bool no_normalize = false, no_packing = false;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "embed", "sentence embeddings of the lines of stdin or --input (a sentence-transformers model)");
  c->footer(
      "Input: one text a line (an empty line embeds the empty text, as sentence-transformers\n"
      "does). Output: one JSON line {\"embedding\": [...]} an input, in input order; with\n"
      "--output FILE.npy one float32 matrix [inputs, dimensions] instead (numpy.load).\n"
      "--precision int8|uint8|binary|ubinary quantizes as sentence-transformers'\n"
      "quantize_embeddings: integers in the JSON lines, an int8/uint8 .npy (binary: the bits\n"
      "x > 0 packed 8 to a byte, ceil(D/8) a row). int8/uint8 map each dimension's range to\n"
      "256 steps: the ranges of --calibration's embeddings, else of all the inputs' (then\n"
      "nothing is printed before the last input is embedded).\n"
      "The model's embedding head (bertrt-convert of a sentence-transformers folder) pools,\n"
      "projects and normalizes as SentenceTransformer.encode; its prompts are applied by name.\n"
      "Inputs longer than the model's max_seq_length are truncated; stderr says how many.\n"
      "  echo 'a cat sat on the mat' | bertrt embed --model all-MiniLM-L6-v2.brt\n"
      "  bertrt embed --model m.brt --input docs.txt --dimensions 128 --output docs.npy");
  c->add_option("--model", o->model,
                "model file (.brt) with an embedding head; with --adapter, its base")
      ->required();
  add_adapter_flag(c, o->adapter);
  c->add_option("--input", o->input, "text file, one input a line (default: stdin)");
  c->add_option("--output", o->output,
                "write a .npy matrix here instead of JSON lines (float32, or --precision's type)");
  c->add_option("--dimensions", o->dimensions,
                "keep the first D dimensions, then normalize (Matryoshka); default: all")
      ->check(at_least(1));
  c->add_flag("--no-normalize", o->no_normalize,
              "the model's own output, truncated (by default each embedding is L2-normalized "
              "after the truncation, as encode(normalize_embeddings=True))");
  auto* name = c->add_option("--prompt-name", o->prompt_name,
                             "put the model's prompt of this name before each input (e.g. query)");
  c->add_option("--prompt", o->prompt,
                "put this text before each input (instead of the model's default prompt; \"\" for none)")
      ->excludes(name);
  c->add_option("--pooling", o->pooling,
                "pool a model without an embedding head: cls, mean, max, mean_sqrt_len_tokens, "
                "weightedmean or lasttoken")
      ->check(CLI::IsMember({"cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean",
                             "lasttoken"}));
  c->add_option("--max-batch-tokens", o->max_batch_tokens,
                "tokens a forward: inputs are packed one after another without padding, each "
                "attending to its own tokens (default 2048)")
      ->check(at_least(1));
  c->add_flag("--no-packing", o->no_packing,
              "pad instead: --batch-size inputs a forward, longest first, padded to the longest "
              "(what the vulkan backend does anyway)");
  c->add_option("--batch-size", o->batch_size,
                "inputs a forward with --no-packing or on the vulkan backend (default 32)")
      ->check(at_least(1));
  c->add_option("--precision", o->precision,
                "float32 (default), int8, uint8, binary or ubinary (sentence-transformers' "
                "encode(precision=...))")
      ->check(CLI::IsMember({"float32", "int8", "uint8", "binary", "ubinary"}));
  c->add_option("--calibration", o->calibration,
                "int8/uint8: take each dimension's range from the embeddings of this file's "
                "lines (default: from the inputs' own embeddings)");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    if (!o->input.empty()) check_input_file("--input", o->input);
    const EmbeddingPrecision precision = parse_embedding_precision(o->precision, "--precision");
    if (!o->calibration.empty()) {
      if (!precision_needs_ranges(precision))
        fail_usage("--calibration sets int8/uint8 ranges; --precision is {}", o->precision);
      check_input_file("--calibration", o->calibration);
    }
    if (!o->output.empty()) {
      check_output_path("--output", o->output);
      check_distinct_files({{"--output", o->output}}, {{"--model", o->model},
                                                       {"--adapter", o->adapter},
                                                       {"--input", o->input},
                                                       {"--calibration", o->calibration}});
    }
    LoadedModel m = load_model(o->model);
    apply_adapter_flag(m, o->model, o->adapter);
    auto be = o->backend.make_inference();
    EmbedOptions opts;
    opts.dimensions = o->dimensions;
    opts.normalize = !o->no_normalize;
    opts.prompt = o->prompt;
    opts.prompt_name = o->prompt_name;
    opts.pooling = o->pooling;
    opts.batch_size = o->batch_size;
    opts.packing = !o->no_packing;
    opts.max_batch_tokens = o->max_batch_tokens;
    const int dim = embedding_dim(*m.model, opts);  // a bad --dimensions fails before any input

    std::optional<QuantizationRanges> ranges;
    if (!o->calibration.empty())
      ranges = calibration_ranges_of_file(o->calibration, dim, [&](const auto& texts) {
        return embed_texts(*m.model, *m.tokenizer, *be, texts, opts);
      });
    EmbeddingOutput out(o->output, precision, dim, std::move(ranges));

    std::ifstream file;
    if (!o->input.empty()) {
      file.open(o->input);
      if (!file) fail("--input {}: cannot open", o->input);
    }
    std::istream& in = o->input.empty() ? std::cin : file;
    const std::string source = o->input.empty() ? "stdin" : o->input;
    std::vector<std::string> chunk;
    size_t inputs = 0, truncated = 0;
    int max_len = 0;
    auto flush = [&] {
      if (chunk.empty()) return;
      EmbedStats st;
      const std::vector<float> e = embed_texts(*m.model, *m.tokenizer, *be, chunk, opts, &st);
      inputs += chunk.size();
      truncated += st.truncated;
      max_len = st.max_seq_length;
      out.add(e.data(), chunk.size());
      chunk.clear();
    };
    for_each_line(in, source, [&](const std::string& text, size_t) {
      chunk.push_back(text);
      if (chunk.size() == kChunk) flush();
    });
    flush();
    out.finish();
    if (truncated)
      fmt::print(stderr, "embed: {} of {} inputs were longer than {} tokens and were truncated\n",
                 truncated, inputs, max_len);
  });
}

}  // namespace bertrt::cli
