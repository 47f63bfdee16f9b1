#include "convert/inspect.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "convert/convert_input.h"
#include "convert/tensor_encode.h"
#include "convert/tf_bundle.h"
#include "io/model_file.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;

// A .brt starts with a u32 size prefix, the u32 root offset, then the identifier "BRT1".
bool is_brt(const std::string& path) {
  if (!fs::is_regular_file(path)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[12] = {};
  return in.read(head, sizeof head) && std::memcmp(head + 8, "BRT1", 4) == 0;
}

}  // namespace

Inspection inspect_path(const std::string& path) {
  Inspection out;
  out.path = path;
  if (is_brt(path)) {
    const ModelFile f = ModelFile::open(path);
    out.format = "brt";
    for (const TensorRecord& t : f.contents().tensors)
      out.tensors.push_back({t.name, safetensors_dtype_name(t.dtype), t.shape, t.nbytes, path});
    return out;
  }
  // A folder or a weights file of a folder: the weights the converter would read.
  // Other folders: a TF bundle (any, not only BERT) when one *.index is there.
  const bool model_dir = fs::is_directory(path) && (fs::exists(fs::path(path) / "config.json") ||
                                                    fs::exists(fs::path(path) / "bert_config.json"));
  const auto reader = model_dir ? open_checkpoint(find_input(path).weights)
                      : fs::is_directory(path) ? open_tf_bundle(path)
                                               : open_checkpoint(path);
  out.format = reader->format();
  out.tensors = reader->tensors();
  return out;
}

std::string inspection_text(const Inspection& in) {
  size_t width = 0;
  uint64_t total = 0;
  for (const auto& t : in.tensors) width = std::max(width, t.name.size());
  std::string s;
  for (const auto& t : in.tensors) {
    s += fmt::format("{:<{}}  {:<6} {:<16} {}\n", t.name, width, t.dtype, fmt::format("[{}]", fmt::join(t.shape, ", ")),
                     t.nbytes);
    total += t.nbytes;
  }
  s += fmt::format("{}: {}, {} tensors, {} bytes\n", in.path, in.format, in.tensors.size(), total);
  return s;
}

std::string inspection_json(const Inspection& in) {
  nlohmann::json j;
  j["path"] = in.path;
  j["format"] = in.format;
  j["tensors"] = nlohmann::json::array();
  uint64_t total = 0;
  for (const auto& t : in.tensors) {
    j["tensors"].push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"bytes", t.nbytes},
                            {"location", t.location}});
    total += t.nbytes;
  }
  j["total_bytes"] = total;
  return j.dump(1) + "\n";
}

}  // namespace bertrt::convert
