// Reading and describing Hugging Face PEFT LoRA folders (io/peft_adapter.h). The rules follow
// peft 0.11 (peft/utils/save_and_load.py get_peft_model_state_dict, peft/tuners/tuners_utils.py
// check_target_module_exists, peft/peft_model.py PeftModelFor*).
#include "io/peft_adapter.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kConfigName = "adapter_config.json";      // peft/utils/constants.py CONFIG_NAME
constexpr const char* kWeightsName = "adapter_model.safetensors";  // SAFETENSORS_WEIGHTS_NAME
constexpr const char* kBinName = "adapter_model.bin";              // WEIGHTS_NAME

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read", path);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) fail("{}: not valid JSON", path);
  if (!j.is_object()) fail("{}: expected a JSON object", path);
  return j;
}

bool set(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// PEFT's task_type → the head bertrt attaches, and the module PEFT saves it under.
HeadKind head_of_task(const std::string& cfg, const json& j) {
  if (!set(j, "task_type"))
    fail("{}: task_type is not set: bertrt runs an adapter with its task head (task_type "
         "SEQ_CLS, TOKEN_CLS or QUESTION_ANS)",
         cfg);
  const json& t = j["task_type"];
  if (t == "SEQ_CLS") return HeadKind::kSequenceClassification;  // or regression: by its shape
  if (t == "TOKEN_CLS") return HeadKind::kTokenClassification;
  if (t == "QUESTION_ANS") return HeadKind::kQuestionAnswering;
  fail("{}: task_type {}: bertrt runs LoRA adapters with a task head: SEQ_CLS, TOKEN_CLS or "
       "QUESTION_ANS",
       cfg, t.dump());
}

// target_modules as lora_sites takes it: a list as it is; a string, PEFT's regex, matched in full
// (re.fullmatch) against every module name, becomes the list of the names it matches.
std::vector<std::string> targets_of(const std::string& cfg, const json& t, const BertConfig& base) {
  std::vector<std::string> out;
  if (t.is_array()) {
    for (const json& x : t) {
      if (!x.is_string()) fail("{}: target_modules: {} is not a string", cfg, x.dump());
      out.push_back(x.get<std::string>());
    }
    return out;
  }
  if (!t.is_string())
    fail("{}: target_modules {}: expected a list of names or a regular expression", cfg, t.dump());
  const std::string pattern = t.get<std::string>();
  if (pattern == "all-linear")
    fail("{}: target_modules \"all-linear\" is not supported: list the Linears instead "
         "([\"query\", \"key\", \"value\", \"dense\"] for all of BERT's)",
         cfg);
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fail("{}: target_modules \"{}\": not a regular expression bertrt reads (ECMAScript syntax, "
         "matched in full as PEFT's re.fullmatch): {}",
         cfg, pattern, e.what());
  }
  for (const std::string& name : lora_module_names(base))
    if (std::regex_match(name, re)) out.push_back(name);
  if (out.empty())
    fail("{}: target_modules \"{}\" matches no module of the model in full (module names are "
         "like bert.encoder.layer.0.attention.self.query)",
         cfg, pattern);
  return out;
}

LoraConfig lora_of(const std::string& cfg, const json& j, const BertConfig& base) {
  if (!j.contains("peft_type")) fail("{}: no 'peft_type' key", cfg);
  if (j["peft_type"] != "LORA")
    fail("{}: peft_type {}: only LORA adapters are supported", cfg, j["peft_type"].dump());
  if (j.contains("bias") && j["bias"] != "none")
    fail("{}: bias {}: only \"none\" is supported (the base's biases stay frozen)", cfg,
         j["bias"].dump());
  for (const char* flag : {"use_dora", "use_rslora", "fan_in_fan_out"})
    if (j.contains(flag) && j[flag] != false)
      fail("{}: {} {}: not supported (bertrt computes plain LoRA: scaling lora_alpha / r, "
           "weights stored [out, in])",
           cfg, flag, j[flag].dump());
  // Options that change which layers get which rank: absent, null or empty in a plain config.
  for (const char* key : {"layers_to_transform", "rank_pattern",
                          "alpha_pattern", "layer_replication", "megatron_config"})
    if (set(j, key) && !j[key].empty())
      fail("{}: {} {}: not supported (one r and lora_alpha for every target)", cfg, key,
           j[key].dump());
  LoraConfig c;
  for (const char* key : {"r", "lora_alpha", "target_modules"})
    if (!set(j, key)) fail("{}: no '{}' key", cfg, key);
  if (!j["r"].is_number_integer()) fail("{}: r {}: expected an integer", cfg, j["r"].dump());
  if (!j["lora_alpha"].is_number())
    fail("{}: lora_alpha {}: expected a number", cfg, j["lora_alpha"].dump());
  const int64_t r = j["r"].get<int64_t>();
  if (r < 1) fail("{}: r {}: expected ≥ 1", cfg, r);
  if (r > (1 << 20)) fail("{}: r {}: wider than any layer", cfg, r);
  c.r = static_cast<int>(r);
  c.alpha = j["lora_alpha"].get<float>();
  if (set(j, "lora_dropout")) {
    if (!j["lora_dropout"].is_number())
      fail("{}: lora_dropout {}: expected a number", cfg, j["lora_dropout"].dump());
    c.dropout = j["lora_dropout"].get<float>();
  }
  c.target_modules = targets_of(cfg, j["target_modules"], base);
  return c;
}

// The tensor's bertrt name: PEFT's "base_model.model." dropped; "" for a name of another layout.
std::string bertrt_name(const std::string& peft) {
  const std::string prefix = kPeftPrefix;
  if (peft.rfind(prefix, 0) != 0) return "";
  return peft.substr(prefix.size());
}

}  // namespace

bool is_peft_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

AdapterContents read_peft_adapter(const std::string& dir, const BertConfig& base) {
  const std::string cfg = (fs::path(dir) / kConfigName).string();
  std::error_code ec;
  if (!fs::is_regular_file(cfg, ec))
    fail("{}: no {} (a Hugging Face PEFT adapter folder holds {} and {})", dir, kConfigName,
         kConfigName, kWeightsName);
  const json j = read_json(cfg);
  AdapterContents a;
  a.lora = lora_of(cfg, j, base);
  a.config = base;  // checked by shape below: the folder records no config of its own
  const std::vector<LoraSite> sites = lora_sites(base, a.lora, cfg);  // r ≤ width, targets exist

  const HeadKind kind = head_of_task(cfg, j);
  const std::string head = kind == HeadKind::kQuestionAnswering ? "qa_outputs" : "classifier";
  // PEFT adds the head to modules_to_save itself ("classifier" and "score" for SEQ_CLS and
  // TOKEN_CLS, "qa_outputs" for QUESTION_ANS); anything else would be a module trained in full
  // that bertrt does not carry.
  if (set(j, "modules_to_save")) {
    if (!j["modules_to_save"].is_array())
      fail("{}: modules_to_save {}: expected a list", cfg, j["modules_to_save"].dump());
    for (const json& m : j["modules_to_save"])
      if (!(m == head || (kind != HeadKind::kQuestionAnswering && m == "score")))
        fail("{}: modules_to_save: {} is not supported (only the task head, '{}', is trained in "
             "full beside the adapters)",
             cfg, m.dump(), head);
  }

  const std::string weights = (fs::path(dir) / kWeightsName).string();
  if (!fs::is_regular_file(weights, ec)) {
    if (fs::exists(fs::path(dir) / kBinName, ec))
      fail("{}: holds {} (a PyTorch pickle) and no {}: rewrite it with `bertrt-convert --to peft "
           "{} -o NEW_DIR`",
           dir, kBinName, kWeightsName, dir);
    fail("{}: no {}", dir, kWeightsName);
  }
  const SafetensorsFile st = SafetensorsFile::open(weights);

  // What the folder must hold: every site's A and B, the head's weight and bias.
  const int H = base.hidden_size;
  std::map<std::string, std::vector<int64_t>> want;
  for (const LoraSite& s : sites) {
    want[s.a()] = {a.lora.r, s.in_f};
    want[s.b()] = {s.out_f, a.lora.r};
  }
  std::vector<int64_t> head_shape;
  if (kind == HeadKind::kQuestionAnswering) {
    head_shape = {2, H};
  } else {
    const SafetensorsTensor* w = st.find(std::string(kPeftPrefix) + head + ".weight");
    if (!w)
      fail("{}: no tensor '{}{}.weight' (the task head, saved by PEFT as a module to save)",
           weights, kPeftPrefix, head);
    if (w->shape.size() != 2 || w->shape[1] != H || w->shape[0] < 1)
      fail("{}: tensor '{}' has shape [{}], expected [num_labels, {}] (hidden_size {})", weights,
           w->name, fmt::join(w->shape, ", "), H, H);
    head_shape = {w->shape[0], H};
  }
  want[head + ".weight"] = head_shape;
  want[head + ".bias"] = {head_shape[0]};

  for (const SafetensorsTensor& t : st.tensors()) {
    const std::string name = bertrt_name(t.name);
    const auto it = want.find(name);
    if (it == want.end())
      fail("{}: tensor '{}' is neither an adapter of target_modules {} nor the task head's ({}*)",
           weights, t.name, j["target_modules"].dump(), std::string(kPeftPrefix) + head);
    if (t.shape != it->second)
      fail("{}: tensor '{}' has shape [{}], expected [{}] (r {} on the base's layer)", weights,
           t.name, fmt::join(t.shape, ", "), fmt::join(it->second, ", "), a.lora.r);
    if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16" && t.dtype != "F64")
      fail("{}: tensor '{}' is {}, expected a float tensor (F32, F16, BF16 or F64)", weights,
           t.name, t.dtype);
  }
  for (const auto& [name, shape] : want)
    if (!st.find(kPeftPrefix + name))
      fail("{}: tensor '{}{}' is missing", weights, kPeftPrefix, name);

  // Hugging Face's defaults for a head without names (PretrainedConfig: LABEL_0, ...); one
  // output is regression, as transformers' problem_type for num_labels 1.
  const int64_t n = head_shape[0];
  a.heads.kind = kind;
  if (kind == HeadKind::kSequenceClassification && n == 1) a.heads.kind = HeadKind::kRegression;
  if (a.heads.kind == HeadKind::kSequenceClassification ||
      a.heads.kind == HeadKind::kTokenClassification)
    for (int64_t i = 0; i < n; ++i) a.heads.labels.push_back(fmt::format("LABEL_{}", i));
  try {
    a.heads.validate();
  } catch (const Error& e) {
    fail("{}: the head {} does not make a {} head: {}", weights, head,
         head_kind_name(a.heads.kind), e.what());
  }
  for (const auto& [name, shape] : want) {
    std::vector<float>& v = a.storage.emplace_back(st.to_f32(kPeftPrefix + name));
    TensorRecord t;
    t.name = name;
    t.shape = shape;
    t.dtype = DType::f32;
    t.data = reinterpret_cast<const uint8_t*>(v.data());
    t.nbytes = v.size() * sizeof(float);
    a.tensors.push_back(std::move(t));
  }
  return a;
}

std::string peft_adapter_config_json(const LoraConfig& lora, HeadKind head,
                                     const std::string& base_model_name_or_path) {
  const char* task = head == HeadKind::kQuestionAnswering     ? "QUESTION_ANS"
                     : head == HeadKind::kTokenClassification ? "TOKEN_CLS"
                     : head == HeadKind::kNone                ? "FEATURE_EXTRACTION"
                                                              : "SEQ_CLS";
  json modules = json::array();
  if (head == HeadKind::kQuestionAnswering) modules.push_back("qa_outputs");
  else if (head != HeadKind::kNone) modules.push_back("classifier");
  // The keys and defaults of peft 0.11's LoraConfig.to_dict(), as save_pretrained writes them.
  json j = {{"alpha_pattern", json::object()},
            {"auto_mapping", nullptr},
            {"base_model_name_or_path", base_model_name_or_path},
            {"bias", "none"},
            {"fan_in_fan_out", false},
            {"inference_mode", true},
            {"init_lora_weights", true},
            {"layer_replication", nullptr},
            {"layers_pattern", nullptr},
            {"layers_to_transform", nullptr},
            {"loftq_config", json::object()},
            // As the flag was written: the float's shortest decimal, not its double expansion.
            {"lora_alpha", std::stod(fmt::format("{}", lora.alpha))},
            {"lora_dropout", std::stod(fmt::format("{}", lora.dropout))},
            {"megatron_config", nullptr},
            {"megatron_core", "megatron.core"},
            {"modules_to_save", modules},
            {"peft_type", "LORA"},
            {"r", lora.r},
            {"rank_pattern", json::object()},
            {"revision", nullptr},
            {"target_modules", lora.target_modules},
            {"task_type", task},
            {"use_dora", false},
            {"use_rslora", false}};
  return j.dump(2) + "\n";
}

}  // namespace bertrt
