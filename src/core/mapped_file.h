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
  // An empty file gives size() == 0 and data() == nullptr. copy_on_write: the mapping is also
  // writable (MAP_PRIVATE): a write makes a private copy of its page, the file never changes; a
  // system that refuses such a mapping (strict overcommit) gets a read-only one (writable() false).
  static MappedFile open(const std::string& path, bool copy_on_write = false);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The mapping, writable when open(copy_on_write) got a writable one; else nullptr.
  uint8_t* writable_data() const { return writable_ ? const_cast<uint8_t*>(data_) : nullptr; }

  // Gives back the memory of the whole pages inside [p, p + n) of a mapping of this file whose
  // bytes were never written (madvise MADV_DONTNEED): they leave the resident set, and a later
  // read maps them again from the file. Pages shared with bytes outside the range are kept.
  static void release_pages(const void* p, size_t n);
  // The same for memory whose origin the caller does not know (e.g. a backend handed a weight's
  // address), made safe by asking the kernel first (/proc/self/pagemap): the whole pages inside
  // [p, p + n) are given back only if every one is a file page (bit 61) or not resident and not
  // swapped, i.e. none was ever written (a written page of a private file mapping, or any page of
  // anonymous memory, is anonymous and would be lost). True when they were given back; false,
  // with nothing changed, otherwise or where pagemap cannot be read.
  static bool release_clean_pages(const void* p, size_t n);
  // The check alone: true when release_clean_pages(p, n) would give the pages back.
  static bool pages_clean(const void* p, size_t n);

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
};

}  // namespace bertrt
