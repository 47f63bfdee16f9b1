// A read-only memory mapping of a whole file (RAII, movable). Readers of the model file and of
// safetensors point tensors into it instead of copying the weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bertrt {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws bertrt::Error naming `path` when it is missing, a directory, or cannot be mapped.
  // An empty file gives size() == 0 and data() == nullptr.
  static MappedFile open(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace bertrt
