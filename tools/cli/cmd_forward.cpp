// bertrt forward: JSON lines of ids in → JSON lines of hidden states and head logits out, named as
// Hugging Face names them (last_hidden_state, pooler_output, prediction_logits,
// seq_relationship_logits, logits, start_logits, end_logits).
#include <fmt/format.h>

#include <cstdint>

#include "common.h"
#include "core/error.h"
#include "core/utf8.h"
#include "forward_input.h"
#include "io/model_io.h"
#include "lora_flags.h"

namespace bertrt::cli {

namespace {

nlohmann::json matrix(const float* x, size_t rows, size_t cols) {
  nlohmann::json m = nlohmann::json::array();
  for (size_t r = 0; r < rows; ++r)
    m.push_back(std::vector<float>(x + r * cols, x + (r + 1) * cols));
  return m;
}

}  // namespace

void add_forward(CLI::App& app) {
  struct Opts {
    std::string model, adapter;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "forward",
      "run the model on stdin JSON lines {\"input_ids\", \"token_type_ids\", \"attention_mask\"}");
  c->footer(
      "Input: one JSON object a line; input_ids required, token_type_ids and attention_mask\n"
      "optional (zeros / ones). \"tokens\" (what `bertrt tokenize --json` writes) is ignored, so\n"
      "  echo 'hello world' | bertrt tokenize --model m.brt --json | bertrt forward --model m.brt\n"
      "works; any other key is an error (a misspelt key is not ignored). Blank lines are skipped.\n"
      "Output: one JSON object a line with Hugging Face's names: last_hidden_state, pooler_output,\n"
      "and the model's heads: prediction_logits, seq_relationship_logits, logits, start_logits,\n"
      "end_logits.");
  c->add_option("--model", o->model, "model file (.brt); with --adapter, its base")->required();
  add_adapter_flag(c, o->adapter);
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    LoadedModel m = load_model(o->model);
    apply_adapter_flag(m, o->model, o->adapter);
    auto be = o->backend.make_inference();
    BertModel& model = *m.model;
    const BertConfig& cfg = model.config();
    for_each_stdin_line([&](const std::string& raw, size_t n) {
      // Blank lines and lines of JSON whitespace are skipped alike (JSON Lines readers do); a
      // byte-order mark may open the first.
      std::string line = raw;
      if (n == 1) drop_utf8_bom(line);
      if (line.find_first_not_of(" \t\r") == std::string::npos) return;
      const ForwardInput fin = parse_forward_line(line, n);
      const auto& ids = fin.input_ids;
      const auto& types = fin.token_type_ids;
      const auto& mask = fin.attention_mask;
      const int T = int(ids.size());
      EncoderInputs in{1, T, ids.data(), types.empty() ? nullptr : types.data(),
                       mask.empty() ? nullptr : mask.data()};
      try {
        model.forward(*be, in, Targets{}, false);
      } catch (const Error& e) {
        fail("stdin: line {}: {}", n, e.what());
      }
      nlohmann::json out;
      out["last_hidden_state"] = matrix(model.last_hidden_state(), T, cfg.hidden_size);
      out["pooler_output"] = matrix(model.pooler_output(), 1, cfg.hidden_size)[0];
      if (model.heads().nsp) out["seq_relationship_logits"] = model.seq_relationship_logits();
      const HeadsConfig& h = model.heads();
      // HF's shapes less the batch: [num_labels] (sequence), [1] (regression), [T][num_labels]
      // (tokens); question answering's start_logits and end_logits [T].
      if (h.resolved_kind() == HeadKind::kTokenClassification)
        out["logits"] = matrix(model.logits().data(), T, h.num_labels());
      else if (h.classifier())
        out["logits"] = model.logits();
      if (h.resolved_kind() == HeadKind::kQuestionAnswering) {
        out["start_logits"] = model.start_logits();
        out["end_logits"] = model.end_logits();
      }
      if (model.heads().mlm)
        out["prediction_logits"] = matrix(model.mlm_logits_all(*be), T, cfg.vocab_size);
      fmt::print("{}\n", out.dump());
    });
  });
}

}  // namespace bertrt::cli
