#include "convert/export_peft.h"

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convert/torch_reader.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "io/adapter_io.h"
#include "io/model_file.h"
#include "io/peft_adapter.h"
#include "io/safetensors.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The two files, synced before either is renamed: adapter_config.json last, so a folder with a
// config is a complete one. A folder this export made is removed again when anything fails.
void write_folder(const std::string& dir, const std::vector<SafetensorsTensor>& tensors,
                  const std::string& config) {
  fs::path folder = fs::path(output_target(dir)).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();
  std::error_code ec;
  const fs::file_status st = fs::status(folder, ec);
  if (fs::exists(st) && !fs::is_directory(st)) fail("{}: exists and is not a folder", dir);
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
  try {
    std::deque<AtomicFile> files;
    // PEFT's own metadata for its safetensors (save_pretrained: {"format": "pt"}).
    write_safetensors(files.emplace_back((folder / "adapter_model.safetensors").string()), tensors,
                      {{"format", "pt"}});
    AtomicFile& c = files.emplace_back((folder / "adapter_config.json").string());
    c.write(config.data(), config.size());
    for (AtomicFile& f : files) f.sync();
    for (AtomicFile& f : files) {
      const fs::file_status s = fs::symlink_status(f.path(), ec);
      if (fs::exists(s) && fs::is_directory(s))
        fail("{}: is a folder, where this export writes a file; nothing in {} was replaced",
             f.path(), dir);
    }
    for (AtomicFile& f : files) f.commit();
  } catch (...) {
    if (created) fs::remove(folder, ec);  // empty again: the temp files are gone
    throw;
  }
}

std::vector<std::string> from_brt(const std::string& path, const std::string& dir) {
  OpenOptions open;
  open.verify_checksums = default_verify_checksums();
  const ModelFile file = ModelFile::open(path, open);
  const ModelContents& c = file.contents();
  const auto rec = c.metadata.find(kAdapterConfigKey);
  if (rec == c.metadata.end())
    fail("{}: a model, not a LoRA adapter (no '{}' record): --to peft exports adapters written "
         "by `bertrt finetune --lora-r`; --to hf exports models",
         path, kAdapterConfigKey);
  const json j = json::parse(rec->second, nullptr, false);
  if (!j.is_object()) fail("{}: the '{}' record is not a JSON object", path, kAdapterConfigKey);
  uint32_t checksum = 0;
  const LoraConfig lora = read_lora_config(path, j, &checksum);
  lora_sites(c.config, lora, path);
  std::deque<std::vector<float>> storage;
  std::vector<SafetensorsTensor> out;
  for (const TensorRecord& t : c.tensors) {
    SafetensorsTensor s;
    s.name = kPeftPrefix + t.name;
    s.shape = t.shape;
    s.dtype = "F32";
    if (t.dtype == DType::f32) {
      s.data = t.data, s.nbytes = t.nbytes;
    } else {
      const std::vector<float>& v = storage.emplace_back(tensor_to_f32(t));
      s.data = reinterpret_cast<const uint8_t*>(v.data()), s.nbytes = v.size() * sizeof(float);
    }
    out.push_back(std::move(s));
  }
  const std::string base =
      j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string()
          ? j["base_model_name_or_path"].get<std::string>()
          : "";
  write_folder(dir, out, peft_adapter_config_json(lora, c.heads.resolved_kind(), base));
  return {};
}

// A PEFT folder again, its weights as safetensors (from adapter_model.bin, which only the
// converter reads).
std::vector<std::string> from_folder(const std::string& in, const std::string& dir) {
  const fs::path cfg = fs::path(in) / "adapter_config.json";
  std::ifstream f(cfg, std::ios::binary);
  if (!f) fail("{}: no adapter_config.json (a Hugging Face PEFT adapter folder)", in);
  std::stringstream ss;
  ss << f.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) fail("{}: not a JSON object", cfg.string());
  if (!j.contains("peft_type") || j["peft_type"] != "LORA")
    fail("{}: peft_type {}: only LORA adapters are supported", cfg.string(),
         j.contains("peft_type") ? j["peft_type"].dump() : "(missing)");
  std::error_code ec;
  const fs::path st = fs::path(in) / "adapter_model.safetensors";
  const fs::path bin = fs::path(in) / "adapter_model.bin";
  const bool is_st = fs::is_regular_file(st, ec);
  if (!is_st && !fs::is_regular_file(bin, ec))
    fail("{}: no adapter_model.safetensors or adapter_model.bin", in);
  if (fs::equivalent(fs::path(in), fs::path(dir), ec))
    fail("-o {}: is the input folder: write the converted adapter to another folder", dir);
  std::unique_ptr<CheckpointReader> torch;
  std::optional<SafetensorsFile> sf;
  std::deque<std::vector<uint8_t>> storage;
  std::vector<SafetensorsTensor> out;
  auto add = [&](const std::string& name, const std::string& dtype,
                 const std::vector<int64_t>& shape, const uint8_t* data, size_t nbytes,
                 const std::string& where) {
    if (name.rfind(kPeftPrefix, 0) != 0)
      fail("{}: tensor '{}' is not named as PEFT saves (\"{}...\")", where, name, kPeftPrefix);
    if (dtype != "F32" && dtype != "F16" && dtype != "BF16" && dtype != "F64")
      fail("{}: tensor '{}' is {}, expected a float tensor", where, name, dtype);
    out.push_back({name, dtype, shape, data, nbytes});
  };
  if (is_st) {
    sf = SafetensorsFile::open(st.string());
    for (const SafetensorsTensor& t : sf->tensors())
      add(t.name, t.dtype, t.shape, t.data, t.nbytes, st.string());
  } else {
    torch = open_torch_checkpoint(bin.string());
    for (size_t i = 0; i < torch->tensors().size(); ++i) {
      const CheckpointTensor& t = torch->tensors()[i];
      const std::vector<uint8_t>& b = storage.emplace_back(torch->read(i));
      add(t.name, t.dtype, t.shape, b.data(), b.size(), bin.string());
    }
  }
  write_folder(dir, out, ss.str());
  return {};
}

}  // namespace

std::vector<std::string> export_peft(const std::string& input, const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(input, ec) ? from_folder(input, dir) : from_brt(input, dir);
}

}  // namespace bertrt::convert
