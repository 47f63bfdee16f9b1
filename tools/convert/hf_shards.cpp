#include "convert/hf_shards.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "convert/safetensors_source.h"
#include "core/error.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;

class ShardedReader : public CheckpointReader, public ZeroCopyReader {
 public:
  explicit ShardedReader(std::vector<std::unique_ptr<CheckpointReader>> shards) : shards_(std::move(shards)) {
    for (size_t s = 0; s < shards_.size(); ++s)
      for (size_t i = 0; i < shards_[s]->tensors().size(); ++i) {
        tensors_.push_back(shards_[s]->tensors()[i]);
        where_.push_back({s, i});
      }
  }
  std::string format() const override { return shards_.front()->format(); }
  const std::vector<CheckpointTensor>& tensors() const override { return tensors_; }
  std::vector<uint8_t> read(size_t i) const override {
    const auto [s, j] = where_.at(i);
    return shards_[s]->read(j);
  }
  const uint8_t* view(size_t i) const override {
    const auto [s, j] = where_.at(i);
    return tensor_view(*shards_[s], j);
  }

 private:
  std::vector<std::unique_ptr<CheckpointReader>> shards_;
  std::vector<CheckpointTensor> tensors_;
  std::vector<std::pair<size_t, size_t>> where_;  // shard, index in shard
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
}

}  // namespace

std::unique_ptr<CheckpointReader> open_sharded(const std::string& index_json, const ShardOpener& open_shard) {
  const nlohmann::json j = read_json(index_json);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object() || j["weight_map"].empty())
    fail("{}: field 'weight_map' missing or empty (expected {{\"tensor name\": \"shard file\"}})", index_json);
  const fs::path dir = fs::path(index_json).parent_path();
  std::vector<std::string> files;  // in first-appearance order
  std::map<std::string, std::set<std::string>> expected;  // shard -> names the map puts there
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) fail("{}: weight_map['{}'] is not a file name", index_json, name);
    const std::string f = file.get<std::string>();
    // Shards are siblings of the index; refuse anything that would read elsewhere.
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      fail("{}: weight_map['{}'] = '{}' is not a file name in the same folder", index_json, name, f);
    if (!expected.count(f)) files.push_back(f);
    expected[f].insert(name);
  }
  std::vector<std::unique_ptr<CheckpointReader>> shards;
  std::unordered_map<std::string, std::string> seen;  // tensor -> shard
  for (const std::string& f : files) {
    const std::string path = (dir / f).string();
    if (!fs::exists(path)) fail("{}: shard '{}' is missing (named in {})", path, f, index_json);
    shards.push_back(open_shard(path));
    std::set<std::string> held;
    for (const CheckpointTensor& t : shards.back()->tensors()) {
      auto [it, fresh] = seen.emplace(t.name, f);
      if (!fresh) fail("{}: tensor '{}' is in two shards, '{}' and '{}'", index_json, t.name, it->second, f);
      held.insert(t.name);
    }
    for (const std::string& name : expected[f])
      if (!held.count(name))
        fail("{}: weight_map puts tensor '{}' in shard '{}', which does not hold it", index_json, name, f);
  }
  return std::make_unique<ShardedReader>(std::move(shards));
}

}  // namespace bertrt::convert
