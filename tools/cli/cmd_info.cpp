// bertrt info: what a model file holds (config with Hugging Face names, heads, tokenizer).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"

namespace bertrt::cli {

nlohmann::json config_json(const BertConfig& c) {
  return {{"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"intermediate_size", c.intermediate_size},
          {"hidden_act", c.hidden_act},
          {"max_position_embeddings", c.max_position_embeddings},
          {"type_vocab_size", c.type_vocab_size},
          {"layer_norm_eps", c.layer_norm_eps},
          {"pad_token_id", c.pad_token_id},
          {"initializer_range", c.initializer_range},
          {"hidden_dropout_prob", c.hidden_dropout_prob},
          {"attention_probs_dropout_prob", c.attention_probs_dropout_prob}};
}

void add_info(CLI::App& app) {
  struct Opts {
    std::string model;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("info", "show a model's config, heads, tokenizer and tensors");
  c->add_option("model", o->model, "model file (.brt)")->required();
  c->add_flag("--json", o->json, "print one JSON object");
  c->callback([o] {
    check_input_file("model", o->model);
    ModelFile f = ModelFile::open(o->model);
    const ModelContents& m = f.contents();
    size_t params = 0, bytes = 0;
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorRecord& t : m.tensors) {
      size_t n = 1;
      for (int64_t d : t.shape) n *= size_t(d);
      params += n;
      bytes += t.nbytes;
      tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", dtype_name(t.dtype)}});
    }
    nlohmann::json heads = {{"mlm", m.heads.mlm}, {"nsp", m.heads.nsp},
                            {"labels", m.heads.labels}, {"task", m.heads.task}};
    nlohmann::json tok = {{"vocab_size", m.tokenizer.vocab.size()},
                          {"do_lower_case", m.tokenizer.do_lower_case},
                          {"tokenize_chinese_chars", m.tokenizer.tokenize_chinese_chars},
                          {"max_input_chars_per_word", m.tokenizer.max_input_chars_per_word}};
    tok["strip_accents"] = m.tokenizer.strip_accents ? nlohmann::json(*m.tokenizer.strip_accents)
                                                     : nlohmann::json(nullptr);
    if (o->json) {
      nlohmann::json j = {{"config", config_json(m.config)}, {"heads", heads},
                          {"tokenizer", tok}, {"num_parameters", params},
                          {"tensor_bytes", bytes}, {"metadata", m.metadata},
                          {"tensors", tensors},
                          {"training_state", m.training_state.has_value()}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("model      {}\n", o->model);
    fmt::print("config     {}\n", config_json(m.config).dump());
    fmt::print("heads      {}\n", heads.dump());
    fmt::print("tokenizer  {}\n", tok.dump());
    fmt::print("parameters {:.3f} M in {} tensors, {:.1f} MB\n", params / 1e6, m.tensors.size(),
               bytes / 1e6);
    for (const auto& [k, v] : m.metadata) fmt::print("metadata   {} = {}\n", k, v);
    if (m.training_state) fmt::print("training   step {}\n", m.training_state->step);
  });
}

}  // namespace bertrt::cli
