#include "convert/export_hf.h"

#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "convert/hf_names.h"
#include "convert/tensor_encode.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/float_decimal.h"
#include "io/model_file.h"
#include "io/quant_io.h"
#include "io/safetensors.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One file of the exported folder, written to its temp file (committed with the others).
AtomicFile& add_text(std::deque<AtomicFile>& files, const std::string& path,
                     const std::string& text) {
  AtomicFile& f = files.emplace_back(path);
  f.write(text.data(), text.size());
  return f;
}

std::string meta_or(const ModelContents& c, const std::string& key, const std::string& fallback) {
  auto it = c.metadata.find(key);
  return it == c.metadata.end() ? fallback : it->second;
}

json config_json(const ModelContents& c, const std::string& arch, const std::vector<std::string>& labels,
                 const std::string& torch_dtype) {
  const BertConfig& k = c.config;
  json j;
  j["architectures"] = json::array({arch});
  j["model_type"] = "bert";
  j["vocab_size"] = k.vocab_size;
  j["hidden_size"] = k.hidden_size;
  j["num_hidden_layers"] = k.num_hidden_layers;
  j["num_attention_heads"] = k.num_attention_heads;
  j["intermediate_size"] = k.intermediate_size;
  // transformers' ACT2FN knows gelu_new and gelu_pytorch_tanh for the tanh approximation.
  j["hidden_act"] = k.hidden_act == "gelu_tanh" ? "gelu_new" : k.hidden_act;
  j["hidden_dropout_prob"] = float_as_written(k.hidden_dropout_prob);
  j["attention_probs_dropout_prob"] = float_as_written(k.attention_probs_dropout_prob);
  j["max_position_embeddings"] = k.max_position_embeddings;
  j["type_vocab_size"] = k.type_vocab_size;
  j["initializer_range"] = float_as_written(k.initializer_range);
  j["layer_norm_eps"] = float_as_written(k.layer_norm_eps);
  j["pad_token_id"] = k.pad_token_id;
  j["position_embedding_type"] = "absolute";
  j["torch_dtype"] = torch_dtype;
  if (!labels.empty()) {
    json id2label = json::object(), label2id = json::object();
    for (size_t i = 0; i < labels.size(); ++i) {
      id2label[std::to_string(i)] = labels[i];
      label2id[labels[i]] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  if (c.heads.resolved_kind() == HeadKind::kRegression) j["problem_type"] = "regression";
  if (!c.heads.task.empty()) j["finetuning_task"] = c.heads.task;
  // bertrt's record of the fine-tuning task (its data format, max_seq_length, a generic TSV's
  // columns), which HF's config has no field for: transformers keeps unknown keys, and the
  // converter restores it, so that a model back from HF predicts as before.
  const std::string task = meta_or(c, "task", "");
  if (!task.empty()) {
    const json t = json::parse(task, nullptr, false);
    if (t.is_object()) j["bertrt_task"] = t;
  }
  return j;
}

json tokenizer_config_json(const ModelContents& c) {
  const TokenizerSpec& t = c.tokenizer;
  json j;
  j["tokenizer_class"] = "BertTokenizer";
  j["do_lower_case"] = t.do_lower_case;
  j["strip_accents"] = t.strip_accents ? json(*t.strip_accents) : json(nullptr);
  j["tokenize_chinese_chars"] = t.tokenize_chinese_chars;
  j["unk_token"] = t.unk_token, j["sep_token"] = t.sep_token, j["pad_token"] = t.pad_token;
  j["cls_token"] = t.cls_token, j["mask_token"] = t.mask_token;
  const std::string max_len = meta_or(c, "tokenizer.model_max_length", "");
  j["model_max_length"] = max_len.empty() ? c.config.max_position_embeddings : std::stoll(max_len);
  return j;
}

bool has_pooler(const std::string& arch) {
  // transformers builds these with BertModel(config, add_pooling_layer=False).
  return arch != "BertForMaskedLM" && arch != "BertForTokenClassification" && arch != "BertForQuestionAnswering";
}

// Whether `name` belongs to transformers' class `arch` (others would load as "unused weights").
bool belongs(const std::string& arch, const std::string& name) {
  auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
  if (starts("bert.")) return !starts("bert.pooler.") || has_pooler(arch);
  if (arch == "BertForPreTraining") return starts("cls.");
  if (arch == "BertForMaskedLM") return starts("cls.predictions.");
  if (arch == "BertForNextSentencePrediction") return starts("cls.seq_relationship.");
  if (arch == "BertForSequenceClassification" || arch == "BertForTokenClassification") return starts("classifier.");
  if (arch == "BertForQuestionAnswering") return starts("qa_outputs.");
  return false;
}

// The folder's files, all written and synced to temp files before any is renamed into place: a
// full disk or an I/O error leaves the folder as it was (a previous export stays whole).
void write_folder(const std::string& dir, const ModelContents& c,
                  const std::vector<SafetensorsTensor>& out, const std::string& arch,
                  const std::vector<std::string>& labels, const std::string& torch_dtype,
                  const ExportExtras& extras) {
  const fs::path d(dir);
  std::deque<AtomicFile> files;
  if (extras.add_files) extras.add_files(files, dir, c);
  // transformers refuses safetensors without metadata format "pt" (modeling_utils.load_state_dict).
  write_safetensors(files.emplace_back((d / "model.safetensors").string()), out,
                    {{"format", "pt"}});
  std::string vocab;
  for (const std::string& tok : c.tokenizer.vocab) vocab += tok + "\n";
  add_text(files, (d / "vocab.txt").string(), vocab);
  add_text(files, (d / "tokenizer_config.json").string(), tokenizer_config_json(c).dump(2) + "\n");
  const TokenizerSpec& t = c.tokenizer;
  const json special = {{"unk_token", t.unk_token},
                        {"sep_token", t.sep_token},
                        {"pad_token", t.pad_token},
                        {"cls_token", t.cls_token},
                        {"mask_token", t.mask_token}};
  add_text(files, (d / "special_tokens_map.json").string(), special.dump(2) + "\n");
  // config.json last: a folder with a config is a complete one.
  add_text(files, (d / "config.json").string(),
           config_json(c, arch, labels, torch_dtype).dump(2) + "\n");
  for (AtomicFile& f : files) f.sync();
  // A rename fails onto a folder: checked for every file before the first is renamed, so the
  // folder never holds a mix of two exports (one model's weights beside another's config).
  // (AtomicFile refuses a folder when it is created; this catches one made since.)
  for (AtomicFile& f : files) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(f.path(), ec);
    if (fs::exists(st) && fs::is_directory(st))
      fail("{}: is a folder, where this export writes a file; nothing in {} was replaced",
           f.path(), dir);
  }
  for (AtomicFile& f : files) f.commit();
}

}  // namespace

std::vector<std::string> export_hf(const std::string& brt_path, const std::string& dir,
                                   const ExportExtras& extras) {
  const ModelFile file = ModelFile::open(brt_path);
  const ModelContents& c = file.contents();
  std::vector<std::string> warnings;

  const std::string arch = hf_architecture(c.heads);
  std::vector<std::string> labels = c.heads.labels;
  // Regression without a name: transformers' default for num_labels = 1.
  if (c.heads.resolved_kind() == HeadKind::kRegression && labels.empty()) labels = {"LABEL_0"};

  // The pooler is not the converter's random one: read from a checkpoint, or bertrt's own (a
  // `bertrt pretrain` with NSP trains it; one fine-tuned for NER or QA after it keeps it).
  const bool trained_pooler =
      meta_or(c, "converter.initialized", "").find("bert.pooler.") == std::string::npos;
  std::vector<SafetensorsTensor> out;
  std::deque<std::vector<uint8_t>> storage;  // dequantized tensors
  std::map<std::string, size_t> dtype_count;
  size_t observers = 0;
  // One warning per kind, not per tensor (an int8 BERT-mini has 17 quantized tensors).
  std::vector<std::string> not_exported;
  std::map<std::string, std::vector<std::string>> dequantized;  // source dtype -> names
  for (const TensorRecord& t : c.tensors) {
    // A quantized file's activation ranges (quant_io.h): no HF module has them, and the converter
    // would refuse them on the way back.
    if (is_observer_tensor(t.name)) {
      ++observers;
      continue;
    }
    // Such a pooler is kept where transformers' class has none (it ignores the weights, as it
    // does bert-base-uncased's with BertForMaskedLM): dropped, it came back initialised at
    // random, and a classifier fine-tuned from it started from that.
    const bool pooler = t.name.rfind("bert.pooler.", 0) == 0;
    if (extras.owns && extras.owns(t.name)) continue;
    if (!belongs(arch, t.name) && !(pooler && trained_pooler)) {
      if (!pooler) not_exported.push_back(t.name);
      continue;
    }
    SafetensorsTensor s;
    s.name = arch == "BertModel" && t.name.rfind("bert.", 0) == 0 ? t.name.substr(5) : t.name;
    s.shape = t.shape;
    if (t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16) {
      s.dtype = safetensors_dtype_name(t.dtype);
      s.data = t.data;
      s.nbytes = t.nbytes;
    } else {
      const std::vector<float> v = tensor_to_f32(t);
      storage.emplace_back(reinterpret_cast<const uint8_t*>(v.data()),
                           reinterpret_cast<const uint8_t*>(v.data()) + v.size() * 4);
      s.dtype = "F32";
      s.data = storage.back().data();
      s.nbytes = storage.back().size();
      dequantized[dtype_name(t.dtype)].push_back(t.name);
    }
    ++dtype_count[s.dtype];
    out.push_back(std::move(s));
  }
  // torch_dtype: the dtype most weights have (all of them, for a converted file).
  std::string main_dtype = "F32";
  for (const auto& [d, n] : dtype_count)
    if (n > dtype_count[main_dtype]) main_dtype = d;
  const std::string torch_dtype = main_dtype == "F16" ? "float16" : main_dtype == "BF16" ? "bfloat16" : "float32";
  // "'a', 'b', 'c' and 2 more"
  auto some = [](const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < 3; ++i)
      s += fmt::format("{}'{}'", i ? ", " : "", names[i]);
    if (names.size() > 3) s += fmt::format(" and {} more", names.size() - 3);
    return s;
  };
  if (!not_exported.empty())
    warnings.push_back(fmt::format("{}: {} tensor{} not part of {}, not exported: {}", brt_path,
                                   not_exported.size(), not_exported.size() == 1 ? " is" : "s are",
                                   arch, some(not_exported)));
  for (const auto& [dtype, names] : dequantized)
    warnings.push_back(fmt::format(
        "{}: {} {} tensor{} written dequantized as F32 (transformers' BERT reads float "
        "weights): {}",
        brt_path, names.size(), dtype, names.size() == 1 ? "" : "s", some(names)));
  if (observers)
    warnings.push_back(fmt::format("{}: the {} activation ranges of its quantization "
                                   "(*.input_observer) are not exported: the folder is fp32",
                                   brt_path, observers));
  if (file.has_training_state())
    warnings.push_back(brt_path + ": optimizer state is not exported (Hugging Face has no place for it)");

  // The folder a link names (a dangling one's target is created, as files are written through
  // links; a loop is an error), and "new/" or "new/." is the folder "new" (its parent was taken
  // to be "new" itself).
  fs::path folder = fs::path(output_target(dir)).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();
  std::error_code ec;
  const fs::file_status st = fs::status(folder, ec);
  if (fs::exists(st) && !fs::is_directory(st)) fail("{}: exists and is not a folder", dir);
  // Files transformers reads that this export does not write: left beside the new ones they would
  // win (a stale tokenizer.json over the new vocab.txt, an old index over model.safetensors).
  // Nothing is deleted: the user decides.
  for (const char* stale : {"tokenizer.json", "added_tokens.json",
                            "model.safetensors.index.json", "pytorch_model.bin",
                            "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack"})
    if (fs::exists(folder / stale, ec))
      fail("{}: holds {}, which this export does not write and transformers would read beside "
           "the new files: remove it, or export to a new folder", dir, stale);
  bool created = false;
  if (!fs::exists(st)) {
    const fs::path parent = fs::absolute(folder, ec).parent_path();
    if (!fs::is_directory(parent, ec))
      fail("{}: cannot create the folder: {} {}", dir, parent.string(),
           fs::exists(parent, ec) ? "is a file, not a folder" : "does not exist");
    fs::create_directory(folder, ec);
    if (ec) fail("{}: cannot create the folder: {}", dir, ec.message());
    created = true;
  }
  std::vector<fs::path> made;  // subfolders this export created, removed again if it fails
  try {
    for (const std::string& sub : extras.subfolders) {
      const fs::path p = folder / sub;
      if (fs::is_directory(p, ec)) continue;
      if (!fs::create_directory(p, ec) || ec)
        fail("{}: cannot create the folder: {}", p.string(), ec ? ec.message() : "a file is there");
      made.push_back(p);
    }
    write_folder(folder.string(), c, out, arch, labels, torch_dtype, extras);
  } catch (...) {
    for (const fs::path& p : made) fs::remove(p, ec);
    if (created) fs::remove(folder, ec);  // empty again: the temp files are gone
    throw;
  }
  return warnings;
}

}  // namespace bertrt::convert
