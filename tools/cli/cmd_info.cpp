// bertrt info: what a model file holds (config with Hugging Face names, heads, tokenizer).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common.h"
#include "core/error.h"
#include "core/float_decimal.h"
#include "io/model_io.h"
#include "io/quant_io.h"
#include "quant/qparams.h"
#include "tasks/task_definition.h"

namespace bertrt::cli {

// float32 fields as written (0.1, 1e-12), not widened (0.10000000149011612).
nlohmann::json config_json(const BertConfig& c) {
  return {{"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"intermediate_size", c.intermediate_size},
          {"hidden_act", c.hidden_act},
          {"max_position_embeddings", c.max_position_embeddings},
          {"type_vocab_size", c.type_vocab_size},
          {"layer_norm_eps", float_as_written(c.layer_norm_eps)},
          {"pad_token_id", c.pad_token_id},
          {"initializer_range", float_as_written(c.initializer_range)},
          {"hidden_dropout_prob", float_as_written(c.hidden_dropout_prob)},
          {"attention_probs_dropout_prob", float_as_written(c.attention_probs_dropout_prob)}};
}

namespace {

// A tensor's quantization for `info`: dtype, axis, scale range and zero points of an integer
// tensor; for an activation range ("<linear>.input_observer", f32 [min, max]) the uint8 scale
// and zero point it implies. Null for a plain float tensor.
nlohmann::json tensor_quantization(const TensorRecord& t) {
  if (!t.scales.empty()) {
    const auto [lo, hi] = std::minmax_element(t.scales.begin(), t.scales.end());
    nlohmann::json q = {{"axis", t.axis}, {"scales", t.scales.size()}, {"scale_min", *lo},
                        {"scale_max", *hi}};
    if (t.zero_points.empty()) q["zero_point"] = 0;
    else q["zero_points"] = t.zero_points.size();
    return q;
  }
  if (t.dtype == DType::f32 && t.nbytes == 2 * sizeof(float) && is_observer_tensor(t.name)) {
    float r[2];
    std::memcpy(r, t.data, sizeof r);
    if (!(r[0] <= r[1])) return {{"input_min", r[0]}, {"input_max", r[1]}};
    const QParams qp = affine_qparams(r[0], r[1]);
    return {{"input_min", r[0]}, {"input_max", r[1]}, {"activation", "uint8"},
            {"scale", qp.scale}, {"zero_point", qp.zero_point}};
  }
  return nullptr;
}

}  // namespace

void add_info(CLI::App& app) {
  struct Opts {
    std::string model;
    bool json = false, devices = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "info", "show a model's config, heads, tokenizer and tensors; or the compute devices");
  c->add_option("model", o->model, "model file (.brt)");
  c->add_flag("--json", o->json, "print one JSON object");
  c->add_flag("--devices", o->devices,
              "list the Vulkan devices (index for --device / BERTRT_VULKAN_DEVICE) and limits");
  c->callback([o] {
    if (o->devices) {
      if (!o->model.empty())
        fail("info --devices lists the compute devices and reads no model: run `bertrt info {}` "
             "for the model",
             o->model);
      const std::vector<std::string> lines = device_lines();
      if (lines.empty()) std::printf("no Vulkan device (no loader or driver found)\n");
      for (const std::string& l : lines) std::printf("%s\n", l.c_str());
      return;
    }
    if (o->model.empty()) throw CLI::RequiredError("model (or --devices)");
    check_input_file("model", o->model);
    // The whole file: the training state too (its checksums and values), and the task record.
    OpenOptions open;
    open.verify_checksums = default_verify_checksums();
    open.training_state = true;
    ModelFile f = ModelFile::open(o->model, open);
    const ModelContents& m = f.contents();
    check_task_record(m.metadata, m.heads, m.config, o->model);
    size_t params = 0, bytes = 0;
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorRecord& t : m.tensors) {
      size_t n = 1;
      for (int64_t d : t.shape) n *= size_t(d);
      params += n;
      bytes += t.nbytes;
      nlohmann::json j = {{"name", t.name}, {"shape", t.shape}, {"dtype", dtype_name(t.dtype)}};
      if (nlohmann::json q = tensor_quantization(t); !q.is_null()) j["quantization"] = q;
      tensors.push_back(std::move(j));
    }
    nlohmann::json heads = {{"mlm", m.heads.mlm}, {"nsp", m.heads.nsp},
                            {"labels", m.heads.labels}, {"task", m.heads.task}};
    // The sentence-embedding head with sentence-transformers' names.
    nlohmann::json embedding;
    if (m.heads.embedding) {
      const EmbeddingConfig& e = *m.heads.embedding;
      nlohmann::json dense = nlohmann::json::array();
      for (const DenseConfig& d : e.dense)
        dense.push_back({{"path", d.path}, {"in_features", d.in_features},
                         {"out_features", d.out_features}, {"bias", d.bias},
                         {"activation_function", d.activation_function}});
      nlohmann::json prompts = nlohmann::json::object();
      for (const auto& [name, text] : e.prompts) prompts[name] = text;
      embedding = {{"pooling", e.pooling.mode_string()},
                   {"include_prompt", e.pooling.include_prompt},
                   {"dense", dense},
                   {"normalize", e.normalize},
                   {"dimension", e.dim(m.config.hidden_size)},
                   {"max_seq_length", e.max_seq_length > 0 ? e.max_seq_length
                                                           : m.config.max_position_embeddings},
                   {"do_lower_case", e.do_lower_case},
                   {"prompts", prompts},
                   {"default_prompt_name", e.default_prompt_name.empty()
                                               ? nlohmann::json(nullptr)
                                               : nlohmann::json(e.default_prompt_name)},
                   {"similarity_fn_name", e.similarity_fn_name}};
      heads["embedding"] = embedding;
    }
    nlohmann::json tok = {{"vocab_size", m.tokenizer.vocab.size()},
                          {"do_lower_case", m.tokenizer.do_lower_case},
                          {"tokenize_chinese_chars", m.tokenizer.tokenize_chinese_chars},
                          {"max_input_chars_per_word", m.tokenizer.max_input_chars_per_word}};
    tok["strip_accents"] = m.tokenizer.strip_accents ? nlohmann::json(*m.tokenizer.strip_accents)
                                                     : nlohmann::json(nullptr);
    // Files written before checksums existed carry none: said so, since nothing vouches for
    // their tensor bytes.
    const size_t segs = f.segments(), summed = f.checksummed_segments();
    const bool verified = summed > 0 && f.checksums_verified();
    nlohmann::json checksums = {{"algorithm", "crc32c"},
                                {"segments", segs},
                                {"checksummed", summed},
                                {"header", f.header_checksummed()},
                                {"verified", verified}};
    if (o->json) {
      nlohmann::json j = {{"config", config_json(m.config)},
                          {"heads", heads},
                          {"checksums", checksums},
                          {"tokenizer", tok},
                          {"num_parameters", params},
                          {"tensor_bytes", bytes},
                          {"metadata", m.metadata},
                          {"tensors", tensors},
                          {"training_state", m.training_state.has_value()}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("model      {}\n", o->model);
    fmt::print("config     {}\n", config_json(m.config).dump());
    if (m.heads.embedding) heads.erase("embedding");  // a line of its own
    fmt::print("heads      {}\n", heads.dump());
    if (!embedding.is_null()) fmt::print("embedding  {}\n", embedding.dump());
    fmt::print("tokenizer  {}\n", tok.dump());
    fmt::print("parameters {:.3f} M in {} tensors, {:.1f} MB\n", params / 1e6, m.tensors.size(),
               bytes / 1e6);
    if (summed == 0)
      fmt::print(
          "checksums  none (written before bertrt stored checksums): tensor bytes not verified\n");
    else
      fmt::print("checksums  CRC-32C on {} of {} segments{}, {}\n", summed, segs,
                 f.header_checksummed() ? " and the header" : "",
                 verified ? "all verified" : "not verified (checks skipped)");
    for (const auto& [k, v] : m.metadata) fmt::print("metadata   {} = {}\n", k, v);
    if (m.training_state) fmt::print("training   step {}\n", m.training_state->step);
    // Quantized files: one line per integer tensor and per activation range.
    for (const TensorRecord& t : m.tensors) {
      const nlohmann::json q = tensor_quantization(t);
      if (q.is_null()) continue;
      if (q.contains("scales"))
        fmt::print("quant      {} {} [{}] axis {}: {} scales in [{:.3g}, {:.3g}], zero point 0\n",
                   t.name, dtype_name(t.dtype), fmt::join(t.shape, ", "), t.axis,
                   t.scales.size(), q["scale_min"].get<float>(), q["scale_max"].get<float>());
      else if (q.contains("scale"))
        fmt::print("quant      {} range [{:.4g}, {:.4g}] -> uint8 scale {:.4g} zero point {}\n",
                   t.name, q["input_min"].get<float>(), q["input_max"].get<float>(),
                   q["scale"].get<float>(), q["zero_point"].get<int>());
    }
  });
}

}  // namespace bertrt::cli
