// PEFT folders in and out (io/peft_adapter.h, convert/export_peft.h): a bertrt adapter exported
// with --to peft reads back through --adapter's loader to the same weights and logits bit for bit;
// the folder holds what PeftModel.save_pretrained writes (names, config keys); a failed export
// leaves no folder; and every kind of bad PEFT folder is refused before the model changes, with
// an error that names the file and the key or tensor. The agreement with PEFT itself is
// peft_reference_test's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "backends/reference/reference_backend.h"
#include "convert/export_peft.h"
#include "core/error.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "io/peft_adapter.h"
#include "io/safetensors.h"
#include "model_runs.h"
#include "test_util.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A base, an adapter trained over it (random B), the adapter's logits, and its PEFT export.
struct Fixture {
  test::TempDir dir;
  BertConfig c = test::tiny_config();
  std::vector<float> want;  // logits of the adapted model
  test::Batch batch = test::make_batch(c, 1);
  Fixture() {
    TokenizerSpec s;
    s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    while (int(s.vocab.size()) < c.vocab_size) s.vocab.push_back("w" + std::to_string(s.vocab.size()));
    const auto tok = make_tokenizer(s);
    BertModel base(c, HeadsConfig{});
    base.init_weights(3);
    save_model(dir.file("base.brt"), base, *tok, {});
    LoadedModel loaded = load_model(dir.file("base.brt"));
    BertModel& m = *loaded.model;
    const uint32_t sum = adapter_base_checksum(m);
    m.set_heads(test::heads_of("sequence"), 1);
    LoraConfig lora;
    lora.r = 3, lora.alpha = 6;
    lora.target_modules = {"query", "value", "dense"};
    m.attach_lora(lora, 5);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 0.2f);
    for (const ParamInfo& p : m.layout().params())
      if (p.name.find(".lora_B.") != std::string::npos)
        for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] = nd(rng);
    save_adapter(dir.file("a.brt"), m, *tok, sum, {}, "base");
    ReferenceBackend be;
    m.forward(be, batch.inputs(), Targets{}, false);
    want = m.logits();
    convert::export_peft(dir.file("a.brt"), dir.file("peft"));
  }
  std::vector<float> logits_with(const std::string& adapter) {
    LoadedModel m = load_model(dir.file("base.brt"));
    apply_adapter(m, dir.file("base.brt"), adapter);
    ReferenceBackend be;
    m.model->forward(be, batch.inputs(), Targets{}, false);
    return m.model->logits();
  }
  json config() const {
    return json::parse(std::ifstream(dir.file("peft/adapter_config.json")));
  }
  // A copy of the export with its adapter_config.json changed by `edit`.
  std::string edited(const std::string& name, const std::function<void(json&)>& edit) {
    const std::string d = dir.file(name);
    fs::create_directories(d);
    fs::copy_file(dir.file("peft/adapter_model.safetensors"), d + "/adapter_model.safetensors",
                  fs::copy_options::overwrite_existing);
    json j = config();
    edit(j);
    std::ofstream(d + "/adapter_config.json") << j.dump(2);
    return d;
  }
  // A copy of the export with its tensors changed by `edit` (name → (shape, values)).
  std::string with_tensors(
      const std::string& name,
      const std::function<void(std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>&)>& edit) {
    const std::string d = dir.file(name);
    fs::create_directories(d);
    fs::copy_file(dir.file("peft/adapter_config.json"), d + "/adapter_config.json",
                  fs::copy_options::overwrite_existing);
    const SafetensorsFile st = SafetensorsFile::open(dir.file("peft/adapter_model.safetensors"));
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> t;
    for (const SafetensorsTensor& x : st.tensors()) t[x.name] = {x.shape, st.to_f32(x.name)};
    edit(t);
    std::vector<SafetensorsTensor> out;
    for (const auto& [n, v] : t)
      out.push_back({n, "F32", v.first, reinterpret_cast<const uint8_t*>(v.second.data()),
                     v.second.size() * sizeof(float)});
    write_safetensors(d + "/adapter_model.safetensors", out, {{"format", "pt"}});
    return d;
  }
  // The error of loading `adapter` over the base; the base must be left without adapters.
  std::string refusal(const std::string& adapter) {
    LoadedModel m = load_model(dir.file("base.brt"));
    const std::string e = error_of([&] { apply_adapter(m, dir.file("base.brt"), adapter); });
    EXPECT_EQ(m.model->lora(), nullptr) << "the model changed before the error: " << e;
    return e;
  }
};

TEST(ConvertPeft, ExportReadsBackToTheSameLogits) {
  Fixture f;
  EXPECT_EQ(f.logits_with(f.dir.file("peft")), f.want);
  EXPECT_EQ(f.logits_with(f.dir.file("a.brt")), f.want);
}

TEST(ConvertPeft, FolderIsWhatPeftSaves) {
  Fixture f;
  const json j = f.config();
  EXPECT_EQ(j["peft_type"], "LORA");
  EXPECT_EQ(j["task_type"], "SEQ_CLS");
  EXPECT_EQ(j["r"], 3);
  EXPECT_EQ(j["lora_alpha"], 6.0);
  EXPECT_EQ(j["target_modules"], json({"query", "value", "dense"}));
  EXPECT_EQ(j["modules_to_save"], json({"classifier"}));
  EXPECT_EQ(j["bias"], "none");
  EXPECT_EQ(j["base_model_name_or_path"], "base");
  // Only keys peft's LoraConfig has: PeftConfig.from_pretrained (peft 0.11) passes each to the
  // constructor, which refuses an unknown one.
  EXPECT_FALSE(j.contains("base_model_checksum"));
  const SafetensorsFile st = SafetensorsFile::open(f.dir.file("peft/adapter_model.safetensors"));
  EXPECT_EQ(st.metadata().at("format"), "pt");
  const SafetensorsTensor& a = st.at("base_model.model.bert.encoder.layer.0.attention.self.query.lora_A.weight");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 32}));
  EXPECT_EQ(st.at("base_model.model.bert.pooler.dense.lora_B.weight").shape,
            (std::vector<int64_t>{32, 3}));  // PEFT's `dense` matches the pooler's too
  EXPECT_EQ(st.at("base_model.model.classifier.weight").shape, (std::vector<int64_t>{3, 32}));
  EXPECT_NE(st.find("base_model.model.classifier.bias"), nullptr);
  // 2 layers × (query, value, 3 dense) + the pooler, A and B each, and the classifier's two.
  EXPECT_EQ(st.tensors().size(), 2 * 11 + 2u);
}

TEST(ConvertPeft, RegexTargetsMatchInFull) {
  Fixture f;
  // The export's sites again as PEFT's regex form: the same adapter.
  const std::string d = f.edited("regex", [](json& j) {
    j["target_modules"] = R"(bert\.(encoder\.layer\.\d+\.(attention\.self\.(query|value)|.*dense)|pooler\.dense))";
  });
  EXPECT_EQ(f.logits_with(d), f.want);
  // Matched in full, as re.fullmatch: a prefix of a name matches nothing.
  const std::string e = f.refusal(
      f.edited("prefix", [](json& j) { j["target_modules"] = R"(bert\.encoder\.layer\.0\.attention\.self\.que)"; }));
  EXPECT_NE(e.find(R"(adapter_config.json: target_modules "bert\.encoder\.layer\.0\.attention\.self\.que" matches no module)"),
            std::string::npos) << e;
}

TEST(ConvertPeft, ModulesToSaveAsPeftWritesThem) {
  Fixture f;
  // PeftModelForSequenceClassification extends the config's list with "classifier" and "score",
  // once per construction: a folder saved after loading one holds them twice.
  const std::string d = f.edited("score", [](json& j) {
    j["modules_to_save"] = {"classifier", "score", "classifier", "score"};
  });
  EXPECT_EQ(f.logits_with(d), f.want);
  const std::string n = f.edited("null", [](json& j) { j["modules_to_save"] = nullptr; });
  EXPECT_EQ(f.logits_with(n), f.want);
}

TEST(ConvertPeft, FailedExportLeavesNoFolder) {
  Fixture f;
  // A model, not an adapter.
  const std::string e = error_of([&] { convert::export_peft(f.dir.file("base.brt"), f.dir.file("out")); });
  EXPECT_NE(e.find("a model, not a LoRA adapter"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(f.dir.file("out")));
  // A folder in the way of a file: nothing in the folder replaced, no temp files left.
  fs::create_directories(f.dir.file("busy/adapter_config.json"));
  const std::string e2 = error_of([&] { convert::export_peft(f.dir.file("a.brt"), f.dir.file("busy")); });
  EXPECT_NE(e2.find("is a folder"), std::string::npos) << e2;
  size_t n = 0;
  for (const auto& x : fs::directory_iterator(f.dir.file("busy"))) n += 1, (void)x;
  EXPECT_EQ(n, 1u);
}

// Each bad config: the error names adapter_config.json and the key.
TEST(ConvertPeft, BadConfigsAreRefusedNamingFileAndKey) {
  Fixture f;
  const struct {
    const char* name;
    std::function<void(json&)> edit;
    const char* expect;
  } cases[] = {
      {"prefix_tuning", [](json& j) { j["peft_type"] = "PREFIX_TUNING"; }, "peft_type \"PREFIX_TUNING\""},
      {"ia3", [](json& j) { j["peft_type"] = "IA3"; }, "peft_type \"IA3\""},
      {"no_type", [](json& j) { j.erase("peft_type"); }, "no 'peft_type' key"},
      {"dora", [](json& j) { j["use_dora"] = true; }, "use_dora true"},
      {"rslora", [](json& j) { j["use_rslora"] = true; }, "use_rslora true"},
      {"fan_in", [](json& j) { j["fan_in_fan_out"] = true; }, "fan_in_fan_out true"},
      {"bias_all", [](json& j) { j["bias"] = "all"; }, "bias \"all\""},
      {"bias_lora", [](json& j) { j["bias"] = "lora_only"; }, "bias \"lora_only\""},
      {"r0", [](json& j) { j["r"] = 0; }, "r 0"},
      {"r_float", [](json& j) { j["r"] = 2.5; }, "r 2.5"},
      {"r_wide", [](json& j) { j["r"] = 33; }, "r = 33 exceeds"},
      {"alpha", [](json& j) { j["lora_alpha"] = "8"; }, "lora_alpha \"8\""},
      {"dropout", [](json& j) { j["lora_dropout"] = 1.5; }, "lora_dropout = 1.5"},
      {"unknown_target", [](json& j) { j["target_modules"] = {"query", "q_proj"}; }, "target 'q_proj' matches no module"},
      {"not_linear", [](json& j) { j["target_modules"] = {"LayerNorm"}; }, "not a Linear"},
      {"all_linear", [](json& j) { j["target_modules"] = "all-linear"; }, "target_modules \"all-linear\""},
      {"bad_regex", [](json& j) { j["target_modules"] = "(query"; }, "target_modules \"(query\""},
      {"no_targets", [](json& j) { j.erase("target_modules"); }, "no 'target_modules' key"},
      {"layers", [](json& j) { j["layers_to_transform"] = {0}; }, "layers_to_transform [0]"},
      {"rank_pattern", [](json& j) { j["rank_pattern"] = {{"query", 2}}; }, "rank_pattern"},
      {"causal_lm", [](json& j) { j["task_type"] = "CAUSAL_LM"; }, "task_type \"CAUSAL_LM\""},
      {"no_task", [](json& j) { j["task_type"] = nullptr; }, "task_type is not set"},
      {"save_more", [](json& j) { j["modules_to_save"] = {"classifier", "bert.pooler"}; }, "modules_to_save: \"bert.pooler\""},
  };
  for (const auto& c : cases) {
    const std::string d = f.edited(c.name, c.edit);
    const std::string e = f.refusal(d);
    EXPECT_NE(e.find(d + "/adapter_config.json"), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e;
  }
  // Not JSON at all.
  const std::string d = f.edited("garbage", [](json&) {});
  std::ofstream(d + "/adapter_config.json") << "{\"r\": ";
  EXPECT_NE(f.refusal(d).find("adapter_config.json: not valid JSON"), std::string::npos);
}

TEST(ConvertPeft, BadFoldersAndTensorsAreRefusedNamingFileAndTensor) {
  Fixture f;
  const std::string prefix = "base_model.model.bert.encoder.layer.0.attention.self.query.";
  // No adapter_config.json.
  fs::create_directories(f.dir.file("empty"));
  std::string e = f.refusal(f.dir.file("empty"));
  EXPECT_NE(e.find(f.dir.file("empty") + ": no adapter_config.json"), std::string::npos) << e;
  // No weights; .bin only.
  const std::string nw = f.edited("no_weights", [](json&) {});
  fs::remove(nw + "/adapter_model.safetensors");
  e = f.refusal(nw);
  EXPECT_NE(e.find("no adapter_model.safetensors"), std::string::npos) << e;
  std::ofstream(nw + "/adapter_model.bin") << "PK";
  e = f.refusal(nw);
  EXPECT_NE(e.find("holds adapter_model.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("bertrt-convert --to peft"), std::string::npos) << e;
  // A missing tensor, a misshaped one, an unknown one, a misshaped head.
  const std::string st = "/adapter_model.safetensors";
  const std::string missing = f.with_tensors("missing", [&](auto& t) { t.erase(prefix + "lora_B.weight"); });
  e = f.refusal(missing);
  EXPECT_NE(e.find(missing + st + ": tensor '" + prefix + "lora_B.weight' is missing"), std::string::npos) << e;
  const std::string shaped = f.with_tensors("shaped", [&](auto& t) {
    auto& a = t[prefix + "lora_A.weight"];
    a.first = {32, 3};  // transposed: as fan_in_fan_out stores it
  });
  e = f.refusal(shaped);
  EXPECT_NE(e.find(shaped + st + ": tensor '" + prefix + "lora_A.weight' has shape [32, 3], expected [3, 32]"),
            std::string::npos) << e;
  const std::string unknown = f.with_tensors("unknown", [&](auto& t) {
    t["base_model.model.bert.encoder.layer.0.attention.self.key.lora_A.weight"] = t[prefix + "lora_A.weight"];
  });
  e = f.refusal(unknown);
  EXPECT_NE(e.find(unknown + st + ": tensor 'base_model.model.bert.encoder.layer.0.attention.self.key.lora_A.weight' "
                                  "is neither an adapter"),
            std::string::npos) << e;
  const std::string head = f.with_tensors("head", [&](auto& t) {
    auto& w = t["base_model.model.classifier.weight"];
    w.first = {3, 16}, w.second.resize(48);
  });
  e = f.refusal(head);
  EXPECT_NE(e.find(head + st + ": tensor 'base_model.model.classifier.weight' has shape [3, 16]"),
            std::string::npos) << e;
  // Another base: a wider model refuses the adapter by shape.
  BertConfig wide = f.c;
  wide.hidden_size = 36, wide.num_attention_heads = 4;
  BertModel w(wide, HeadsConfig{});
  w.init_weights(3);
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  while (int(s.vocab.size()) < wide.vocab_size) s.vocab.push_back("w" + std::to_string(s.vocab.size()));
  save_model(f.dir.file("wide.brt"), w, *make_tokenizer(s), {});
  LoadedModel wl = load_model(f.dir.file("wide.brt"));
  e = error_of([&] { apply_adapter(wl, f.dir.file("wide.brt"), f.dir.file("peft")); });
  EXPECT_NE(e.find("has shape [3, 32], expected ["), std::string::npos) << e;
}

TEST(ConvertPeft, BinFolderIsRewrittenAsSafetensors) {
  if (!test::have_torch()) GTEST_SKIP() << "python3-torch missing (it writes adapter_model.bin)";
  Fixture f;
  const std::string d = f.dir.file("bin");
  fs::create_directories(d);
  fs::copy_file(f.dir.file("peft/adapter_config.json"), d + "/adapter_config.json");
  // torch.save of the same tensors, as PEFT's save_pretrained(safe_serialization=False) writes.
  const std::string script = f.dir.file("to_bin.py");
  std::ofstream(script) << "import json, struct, sys, torch\n"
                           "src, dst = sys.argv[1], sys.argv[2]\n"
                           "data = open(src, 'rb').read()\n"
                           "n = struct.unpack('<Q', data[:8])[0]\n"
                           "h = json.loads(data[8:8 + n])\n"
                           "body = data[8 + n:]\n"
                           "out = {k: torch.frombuffer(bytearray(body[v['data_offsets'][0]:v['data_offsets'][1]]),"
                           " dtype=torch.float32).reshape(v['shape']) for k, v in h.items() if k != '__metadata__'}\n"
                           "torch.save(out, dst)\n";
  const std::string cmd = std::string(test::kPython) + " " + script + " " +
                          f.dir.file("peft/adapter_model.safetensors") + " " + d + "/adapter_model.bin";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  convert::export_peft(d, f.dir.file("from_bin"));
  EXPECT_EQ(f.logits_with(f.dir.file("from_bin")), f.want);
}

}  // namespace
}  // namespace bertrt
