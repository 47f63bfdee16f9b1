#include "convert/export_st.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "convert/export_hf.h"
#include "convert/tensor_encode.h"
#include "core/error.h"
#include "io/model_file.h"
#include "io/safetensors.h"

namespace bertrt::convert {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void add_json(std::deque<AtomicFile>& files, const fs::path& path, const json& j) {
  const std::string text = j.dump(2) + "\n";
  files.emplace_back(path.string()).write(text.data(), text.size());
}

json pooling_json(const PoolingConfig& p, int hidden_size) {
  json j;  // the keys in Pooling.get_config_dict's order
  j["word_embedding_dimension"] = hidden_size;
  j["pooling_mode_cls_token"] = p.cls_token;
  j["pooling_mode_mean_tokens"] = p.mean_tokens;
  j["pooling_mode_max_tokens"] = p.max_tokens;
  j["pooling_mode_mean_sqrt_len_tokens"] = p.mean_sqrt_len_tokens;
  j["pooling_mode_weightedmean_tokens"] = p.weightedmean_tokens;
  j["pooling_mode_lasttoken"] = p.lasttoken;
  j["include_prompt"] = p.include_prompt;
  return j;
}

}  // namespace

std::vector<std::string> export_sentence_transformers(const std::string& brt_path,
                                                      const std::string& dir) {
  std::optional<EmbeddingConfig> head;
  {
    const ModelFile file = ModelFile::open(brt_path);
    head = file.contents().heads.embedding;
  }
  if (!head)
    fail("{}: has no sentence-embedding head (convert a sentence-transformers folder to get one); "
         "--to hf writes its Hugging Face folder", brt_path);
  // The folders as SentenceTransformer.save names them: "<index>_<class>".
  std::vector<std::pair<std::string, std::string>> modules = {
      {"", "sentence_transformers.models.Transformer"},
      {"1_Pooling", "sentence_transformers.models.Pooling"}};
  for (const DenseConfig& d : head->dense) modules.push_back({d.path, "sentence_transformers.models.Dense"});
  if (head->normalize)
    modules.push_back({std::to_string(modules.size()) + "_Normalize",
                       "sentence_transformers.models.Normalize"});
  ExportExtras extras;
  for (size_t i = 1; i < modules.size(); ++i) extras.subfolders.push_back(modules[i].first);
  extras.owns = [&](const std::string& name) {
    for (const DenseConfig& d : head->dense)
      if (name.rfind(d.path + ".", 0) == 0) return true;
    return false;
  };
  extras.add_files = [&](std::deque<AtomicFile>& files, const std::string& folder,
                         const ModelContents& c) {
    const fs::path root(folder);
    json list = json::array();
    for (size_t i = 0; i < modules.size(); ++i) {
      const std::string& path = modules[i].first;
      const std::string name = i == 0 ? "0" : path;  // what SentenceTransformer.save writes
      list.push_back({{"idx", i}, {"name", name}, {"path", path}, {"type", modules[i].second}});
    }
    add_json(files, root / "modules.json", list);
    json sbert;
    sbert["max_seq_length"] = head->max_seq_length > 0 ? head->max_seq_length
                                                        : c.config.max_position_embeddings;
    sbert["do_lower_case"] = head->do_lower_case;
    add_json(files, root / "sentence_bert_config.json", sbert);
    json st;
    json prompts = json::object();
    for (const auto& [name, text] : head->prompts) prompts[name] = text;
    st["prompts"] = prompts;
    st["default_prompt_name"] =
        head->default_prompt_name.empty() ? json(nullptr) : json(head->default_prompt_name);
    st["similarity_fn_name"] = head->similarity_fn_name;
    add_json(files, root / "config_sentence_transformers.json", st);
    add_json(files, root / "1_Pooling" / "config.json",
             pooling_json(head->pooling, c.config.hidden_size));
    for (const DenseConfig& d : head->dense) {
      add_json(files, root / d.path / "config.json",
               {{"in_features", d.in_features},
                {"out_features", d.out_features},
                {"bias", d.bias},
                {"activation_function", d.activation_function}});
      std::vector<SafetensorsTensor> tensors;
      for (const char* key : {"linear.weight", "linear.bias"}) {
        const std::string name = d.path + "." + key;
        for (const TensorRecord& t : c.tensors)
          if (t.name == name) {
            if (t.dtype != DType::f32 && t.dtype != DType::f16 && t.dtype != DType::bf16)
              fail("{}: tensor '{}' is {}, not a float the Dense module can load", brt_path,
                   name, dtype_name(t.dtype));
            tensors.push_back({key, safetensors_dtype_name(t.dtype), t.shape, t.data, t.nbytes});
          }
      }
      write_safetensors(files.emplace_back((root / d.path / "model.safetensors").string()),
                        tensors, {{"format", "pt"}});
    }
  };
  return export_hf(brt_path, dir, extras);
}

}  // namespace bertrt::convert
