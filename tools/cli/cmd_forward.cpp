// bertrt forward: JSON lines of ids in → JSON lines of hidden states and head logits out, named as
// Hugging Face names them (last_hidden_state, pooler_output, prediction_logits,
// seq_relationship_logits, logits).
#include <fmt/format.h>

#include <cstdint>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"

namespace bertrt::cli {

namespace {

std::vector<int32_t> int_list(const nlohmann::json& j, const char* key, size_t line, bool required,
                              size_t expect_len) {
  if (!j.contains(key)) {
    if (required) fail("stdin line {}: field \"{}\" is missing", line, key);
    return {};
  }
  const auto& a = j[key];
  if (!a.is_array()) fail("stdin line {}: \"{}\" must be a list of integers", line, key);
  std::vector<int32_t> v;
  for (const auto& x : a) {
    // Range-checked before narrowing: 4294967397 must not wrap around to 101.
    if (!x.is_number_integer() || x.get<int64_t>() < INT32_MIN || x.get<int64_t>() > INT32_MAX ||
        (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT32_MAX)))
      fail("stdin line {}: \"{}\" must be a list of 32-bit integers, got {}", line, key, x.dump());
    v.push_back(x.get<int32_t>());
  }
  if (expect_len && v.size() != expect_len)
    fail("stdin line {}: \"{}\" has {} entries, input_ids has {}", line, key, v.size(), expect_len);
  return v;
}

nlohmann::json matrix(const float* x, size_t rows, size_t cols) {
  nlohmann::json m = nlohmann::json::array();
  for (size_t r = 0; r < rows; ++r) m.push_back(std::vector<float>(x + r * cols, x + (r + 1) * cols));
  return m;
}

}  // namespace

void add_forward(CLI::App& app) {
  struct Opts {
    std::string model;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "forward",
      "run the model on stdin JSON lines {\"input_ids\", \"token_type_ids\", \"attention_mask\"}");
  c->add_option("--model", o->model, "model file (.brt)")->required();
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    LoadedModel m = load_model(o->model);
    auto be = o->backend.make();
    BertModel& model = *m.model;
    const BertConfig& cfg = model.config();
    for_each_stdin_line([&](const std::string& line, size_t n) {
      if (line.empty()) return;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) fail("stdin line {}: not a JSON object", n);
      const auto ids = int_list(j, "input_ids", n, true, 0);
      if (ids.empty()) fail("stdin line {}: input_ids is empty", n);
      const auto types = int_list(j, "token_type_ids", n, false, ids.size());
      const auto mask = int_list(j, "attention_mask", n, false, ids.size());
      for (int32_t m : mask)
        if (m != 0 && m != 1) fail("stdin line {}: attention_mask values must be 0 or 1, got {}", n, m);
      const int T = int(ids.size());
      EncoderInputs in{1, T, ids.data(), types.empty() ? nullptr : types.data(),
                       mask.empty() ? nullptr : mask.data()};
      try {
        model.forward(*be, in, Targets{}, false);
      } catch (const Error& e) {
        fail("stdin line {}: {}", n, e.what());
      }
      nlohmann::json out;
      out["last_hidden_state"] = matrix(model.last_hidden_state(), T, cfg.hidden_size);
      out["pooler_output"] = matrix(model.pooler_output(), 1, cfg.hidden_size)[0];
      if (model.heads().nsp) out["seq_relationship_logits"] = model.seq_relationship_logits();
      if (model.heads().classifier()) out["logits"] = model.logits();
      if (model.heads().mlm)
        out["prediction_logits"] = matrix(model.mlm_logits_all(*be), T, cfg.vocab_size);
      fmt::print("{}\n", out.dump());
    });
  });
}

}  // namespace bertrt::cli
