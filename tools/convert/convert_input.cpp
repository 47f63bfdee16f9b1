#include "convert/convert_input.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "convert/hf_shards.h"
#include "convert/tf_bundle.h"
#include "convert/torch_reader.h"
#include "convert/safetensors_source.h"
#include "core/error.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}


bool is_torch_file(const std::string& p) { return ends_with(p, ".bin") || ends_with(p, ".pt") || ends_with(p, ".pth"); }

std::string parent_dir(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The TF checkpoint prefix in `dir`: the one *.index file (bert_model.ckpt preferred).
std::string tf_prefix_in(const std::string& dir) {
  std::vector<std::string> prefixes;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (ends_with(name, ".index") && !ends_with(name, ".index.json"))
      prefixes.push_back((fs::path(dir) / name.substr(0, name.size() - 6)).string());
  }
  if (prefixes.empty()) fail("{}: bert_config.json but no TF checkpoint (*.index) in the folder", dir);
  for (const std::string& p : prefixes)
    if (fs::path(p).filename() == "bert_model.ckpt") return p;
  if (prefixes.size() > 1)
    fail("{}: {} TF checkpoints (*.index) in the folder; name one: {}.index", dir, prefixes.size(), prefixes.front());
  return prefixes.front();
}

InputPaths tf_input(const std::string& dir, const std::string& prefix) {
  InputPaths in;
  in.kind = InputPaths::Kind::tf1;
  in.dir = dir;
  in.weights = prefix;
  in.config = (fs::path(dir) / "bert_config.json").string();
  in.vocab = (fs::path(dir) / "vocab.txt").string();
  if (!fs::exists(in.config)) fail("{}: bert_config.json is missing (next to the TF checkpoint {})", dir, prefix);
  return in;
}

InputPaths hf_input(const std::string& dir, const std::string& weights) {
  InputPaths in;
  in.dir = dir;
  in.weights = weights;
  in.config = (fs::path(dir) / "config.json").string();
  in.vocab = (fs::path(dir) / "vocab.txt").string();
  if (!fs::exists(in.config)) fail("{}: config.json is missing (Hugging Face folder of {})", dir, weights);
  return in;
}

}  // namespace

InputPaths find_input(const std::string& path) {
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / "config.json")) {
      for (const char* w : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                            "pytorch_model.bin.index.json"}) {
        const fs::path p = fs::path(path) / w;
        if (fs::exists(p)) return hf_input(path, p.string());
      }
      fail("{}: config.json but no weights (looked for model.safetensors, model.safetensors.index.json, "
           "pytorch_model.bin, pytorch_model.bin.index.json)", path);
    }
    if (fs::exists(fs::path(path) / "bert_config.json")) return tf_input(path, tf_prefix_in(path));
    fail("{}: config.json is missing (expected a Hugging Face folder with config.json, or a TF1 BERT "
         "folder with bert_config.json)", path);
  }
  if (ends_with(path, ".index") && fs::is_regular_file(path))
    return tf_input(parent_dir(path), path.substr(0, path.size() - 6));
  if (fs::is_regular_file(path + ".index")) return tf_input(parent_dir(path), path);
  if (!fs::exists(path)) fail("{}: no such file or folder", path);
  if (ends_with(path, ".safetensors") || is_torch_file(path) || ends_with(path, ".index.json"))
    return hf_input(parent_dir(path), path);
  if (is_brt_file(path))
    fail("{}: a bertrt model file is not a checkpoint to convert; to export it, add --to hf", path);
  fail("{}: unknown input (expected a folder, .safetensors, .bin/.pt/.pth, *.index.json or a TF "
       "checkpoint .index)", path);
}

std::unique_ptr<CheckpointReader> open_checkpoint(const std::string& path) {
  if (ends_with(path, ".index.json")) {
    // The shards are of the format the index is named for (model.safetensors.index.json ...).
    if (ends_with(path, ".safetensors.index.json")) return open_sharded(path, open_safetensors);
    return open_sharded(path, [](const std::string& p) {
      return ends_with(p, ".safetensors") ? open_safetensors(p) : open_torch_checkpoint(p);
    });
  }
  if (ends_with(path, ".safetensors")) return open_safetensors(path);
  if (is_torch_file(path)) return open_torch_checkpoint(path);
  if (ends_with(path, ".index") && fs::is_regular_file(path)) return open_tf_bundle(path.substr(0, path.size() - 6));
  if (fs::is_regular_file(path + ".index")) return open_tf_bundle(path);
  if (!fs::exists(path)) fail("{}: no such file", path);
  fail("{}: unknown checkpoint format (expected .safetensors, .bin/.pt/.pth, *.index.json or a TF "
       "checkpoint .index)", path);
}

bool is_brt_file(const std::string& path) {
  char head[12] = {};
  std::ifstream(path, std::ios::binary).read(head, sizeof head);
  return std::memcmp(head + 8, "BRT1", 4) == 0;
}

void check_replaceable_brt(const std::string& what, const std::string& path) {
  std::error_code ec;  // a link loop: not a file here (check_writable names the loop)
  if (!std::filesystem::is_regular_file(path, ec)) return;
  if (!is_brt_file(path))
    fail("{} {}: exists and is not a .brt model file (an input of the conversion?); it would be "
         "replaced: remove it or choose another name", what, path);
}

}  // namespace bertrt::convert
