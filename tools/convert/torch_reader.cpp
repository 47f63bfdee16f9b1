#include "convert/torch_reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "convert/pickle.h"
#include "convert/torch_state_dict.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace bertrt::convert {
namespace {

using pickle::Kind;
using torch_detail::StorageRef;
using torch_detail::TensorRef;

// Shared by both formats: the listing, and read() as "storage bytes -> strided gather".
class TorchReader : public CheckpointReader {
 public:
  const std::vector<CheckpointTensor>& tensors() const override { return listing_; }

  std::vector<uint8_t> read(size_t i) const override {
    if (i >= refs_.size()) fail("{}: tensor index {} out of range ({} tensors)", path_, i, refs_.size());
    const TensorRef& t = refs_[i];
    std::vector<uint8_t> holder;
    const uint8_t* storage = storage_data(t, holder);
    if (!holder.empty() && torch_detail::is_whole_storage(t)) {  // the common case: no second copy
      holder.resize(t.numel * t.storage.itemsize);
      if (big_endian_) torch_detail::byteswap(holder.data(), holder.size(), t.storage.itemsize);
      return holder;
    }
    return torch_detail::gather(t, storage, big_endian_);
  }

 protected:
  explicit TorchReader(std::string path) : path_(std::move(path)) {}

  void set_tensors(std::vector<TensorRef> refs) {
    check_aliasing(refs);
    refs_ = std::move(refs);
    for (const TensorRef& r : refs_)
      listing_.push_back({r.name, r.storage.dtype, r.shape, r.numel * r.storage.itemsize, path_});
  }
  // The root storage's bytes (numel * itemsize of them, at least), in `holder` or a mapping.
  virtual const uint8_t* storage_data(const TensorRef& t, std::vector<uint8_t>& holder) const = 0;

  // Tensors may share storages (tied weights, views: torch saves them so), and a view may repeat
  // elements (expand: stride 0), but the bytes they stand for must stay within a few times the
  // bytes stored: else a small file whose tensors all alias one matrix (or broadcast one value)
  // would convert into a model of any size, each tensor read and copied again.
  void check_aliasing(const std::vector<TensorRef>& refs) const {
    std::map<std::string, uint64_t> stored;  // root storage key -> bytes
    uint64_t viewed = 0;
    for (const TensorRef& r : refs) {
      stored[r.storage.key] = r.storage.numel * r.storage.itemsize;
      // Each product fits (collect_tensors); their sum saturates.
      if (__builtin_add_overflow(viewed, r.numel * r.storage.itemsize, &viewed)) viewed = UINT64_MAX;
    }
    uint64_t bytes = 0;
    for (const auto& [key, n] : stored) bytes += n;
    constexpr uint64_t kFactor = 4, kSlack = uint64_t(1) << 20;
    if (viewed > kFactor * bytes + kSlack)
      fail("{}: its tensors stand for {} bytes, but its storages hold only {}: tensors that "
           "alias or broadcast the same storage elements may stand for at most {} times the bytes "
           "stored (a damaged or hostile file)",
           path_, viewed, bytes, kFactor);
  }

  std::string path_;
  std::vector<TensorRef> refs_;
  std::vector<CheckpointTensor> listing_;
  bool big_endian_ = false;
};

// --- zip (torch >= 1.6) -----------------------------------------------------------------------

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};

std::string zip_open_error(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string msg = zip_error_strerror(&e);
  zip_error_fini(&e);
  return msg;
}

class TorchZipReader final : public TorchReader {
 public:
  explicit TorchZipReader(const std::string& path) : TorchReader(path) {
    int code = 0;
    zip_.reset(zip_open(path.c_str(), ZIP_RDONLY, &code));
    if (!zip_) fail("{}: not a readable zip file ({})", path, zip_open_error(code));
    file_size_ = file_size(path);
    // Like torch's PyTorchStreamReader: the archive folder is that of the first record.
    const char* first = zip_get_num_entries(zip_.get(), 0) > 0 ? zip_get_name(zip_.get(), 0, 0) : nullptr;
    const char* slash = first ? std::strchr(first, '/') : nullptr;
    if (!slash) fail("{}: zip has no '<archive>/data.pkl' record (not a torch.save file)", path);
    prefix_ = std::string(first, slash) + "/";

    const std::vector<uint8_t> pkl = read_record(prefix_ + "data.pkl", "the pickle");
    const std::string what = path + " (" + prefix_ + "data.pkl)";
    doc_ = pickle::unpickle(pkl.data(), pkl.size(), 0, what);
    read_byteorder();
    std::vector<TensorRef> refs = torch_detail::collect_tensors(doc_, what);
    for (const TensorRef& r : refs) check_record(r);
    set_tensors(std::move(refs));
  }

  std::string format() const override { return "torch-zip"; }

 protected:
  const uint8_t* storage_data(const TensorRef& t, std::vector<uint8_t>& holder) const override {
    holder = read_record(prefix_ + "data/" + t.storage.key, "storage of tensor '" + t.name + "'");
    return holder.data();
  }

 private:
  static uint64_t file_size(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return 0;
    std::fseek(f, 0, SEEK_END);
    const long n = std::ftell(f);
    std::fclose(f);
    return n < 0 ? 0 : static_cast<uint64_t>(n);
  }

  zip_int64_t locate(const std::string& name, const std::string& role) const {
    const zip_int64_t index = zip_name_locate(zip_.get(), name.c_str(), 0);
    if (index < 0) fail("{}: zip has no record '{}' ({})", path_, name, role);
    return index;
  }

  // The uncompressed size, bounded by what the file can hold: stored records (torch writes no
  // other kind) fit in the file, deflated ones expand at most ~1032x (zlib's limit).
  uint64_t record_size(zip_int64_t index, const std::string& name) const {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_.get(), static_cast<zip_uint64_t>(index), 0, &st) != 0 ||
        !(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE))
      fail("{}: zip record '{}': cannot read its size ({})", path_, name, zip_strerror(zip_.get()));
    const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
    const uint64_t limit = stored ? file_size_ : st.comp_size * 1032 + 1024;
    if (st.size > limit || st.comp_size > file_size_)
      fail("{}: zip record '{}' claims {} bytes, more than the file can hold", path_, name, st.size);
    return st.size;
  }

  std::vector<uint8_t> read_record(const std::string& name, const std::string& role) const {
    std::lock_guard<std::mutex> lock(mutex_);  // a zip_t is not thread-safe
    const zip_int64_t index = locate(name, role);
    std::vector<uint8_t> out(record_size(index, name));
    zip_file_t* f = zip_fopen_index(zip_.get(), static_cast<zip_uint64_t>(index), 0);
    if (!f) fail("{}: zip record '{}': {}", path_, name, zip_strerror(zip_.get()));
    size_t got = 0;
    while (got < out.size()) {
      const zip_int64_t n = zip_fread(f, out.data() + got, out.size() - got);
      if (n <= 0) {
        const std::string msg = n < 0 ? zip_error_strerror(zip_file_get_error(f)) : "ends early";
        zip_fclose(f);
        fail("{}: zip record '{}': {} after {} of {} bytes", path_, name, msg, got, out.size());
      }
      got += static_cast<size_t>(n);
    }
    // Reading past the end is what makes libzip compare the CRC-32.
    uint8_t extra;
    const zip_int64_t tail = zip_fread(f, &extra, 1);
    const std::string msg = tail < 0 ? zip_error_strerror(zip_file_get_error(f)) : "";
    zip_fclose(f);
    if (tail != 0)
      fail("{}: zip record '{}': {}", path_, name, tail < 0 ? msg : "longer than its stated size");
    return out;
  }

  void read_byteorder() {
    const std::string name = prefix_ + "byteorder";
    if (zip_name_locate(zip_.get(), name.c_str(), 0) < 0) return;  // older files: little-endian
    const std::vector<uint8_t> b = read_record(name, "byte order");
    const std::string order(b.begin(), b.end());
    if (order == "big") big_endian_ = true;
    else if (order != "little")
      fail("{}: zip record '{}' says '{}', expected 'little' or 'big'", path_, name, order);
  }

  void check_record(const TensorRef& r) const {
    const std::string name = prefix_ + "data/" + r.storage.key;
    const uint64_t size = record_size(locate(name, "storage of tensor '" + r.name + "'"), name);
    const uint64_t need = r.storage.numel * r.storage.itemsize;
    if (size < need)
      fail("{}: zip record '{}' has {} bytes, but tensor '{}' uses a {}-element {} storage ({} bytes)",
           path_, name, size, r.name, r.storage.numel, r.storage.dtype, need);
  }

  std::unique_ptr<zip_t, ZipDiscard> zip_;
  mutable std::mutex mutex_;
  uint64_t file_size_ = 0;
  std::string prefix_;
  pickle::Document doc_;
};

// --- legacy (pre-1.6) -------------------------------------------------------------------------

// torch/serialization.py MAGIC_NUMBER 0x1950a86a20f9469cfc6c as LONG1 bytes (little-endian).
const char kMagicBytes[] = "\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
constexpr int64_t kLegacyProtocol = 1001;

class TorchLegacyReader final : public TorchReader {
 public:
  explicit TorchLegacyReader(const std::string& path)
      : TorchReader(path), file_(MappedFile::open(path)), fd_(path) {
    if (fd_.fd < 0) fail("{}: cannot open ({})", path, std::strerror(errno));
    const uint8_t* data = file_.data();
    const size_t size = file_.size();
    pickle::Document magic;
    try {
      magic = pickle::unpickle(data, size, 0, path);
    } catch (const Error& e) {
      fail("{}: not a torch.save file: neither a zip nor a legacy file ({})", path, e.what());
    }
    if (magic.root->kind != Kind::BigInt || magic.root->text != std::string(kMagicBytes, 10))
      fail("{}: not a torch.save file: the first pickle is not torch's magic number", path);
    pickle::Document proto = pickle::unpickle(data, size, magic.end, path);
    if (proto.root->kind != Kind::Int || proto.root->integer != kLegacyProtocol)
      fail("{}: legacy torch file: protocol version is not {}", path, kLegacyProtocol);
    pickle::Document sys_info = pickle::unpickle(data, size, proto.end, path);
    read_sys_info(*sys_info.root);
    doc_ = pickle::unpickle(data, size, sys_info.end, path);
    pickle::Document keys = pickle::unpickle(data, size, doc_.end, path);
    index_storages(*keys.root, keys.end);
    std::vector<TensorRef> refs = torch_detail::collect_tensors(doc_, path);
    for (const TensorRef& r : refs) check_storage(r);
    set_tensors(std::move(refs));
  }

  std::string format() const override { return "torch-legacy"; }

 protected:
  // Read with pread rather than through the mapping, so resident memory stays one storage (the
  // mapping is only touched for the pickles at the start of the file).
  const uint8_t* storage_data(const TensorRef& t, std::vector<uint8_t>& holder) const override {
    const Placed& p = storages_.at(t.storage.key);
    holder.resize(p.numel * t.storage.itemsize);
    size_t got = 0;
    while (got < holder.size()) {
      const ssize_t n = ::pread(fd_.fd, holder.data() + got, holder.size() - got,
                                static_cast<off_t>(p.offset + got));
      if (n <= 0)
        fail("{}: reading storage '{}' of tensor '{}': {}", path_, t.storage.key, t.name,
             n < 0 ? std::strerror(errno) : "file ends early");
      got += static_cast<size_t>(n);
    }
    return holder.data();
  }

 private:
  struct Placed {
    uint64_t offset;  // of the first data byte in the file
    uint64_t numel;
  };

  void read_sys_info(const pickle::Value& info) {
    if (info.kind != Kind::Dict) fail("{}: legacy torch file: sys_info is not a dict", path_);
    for (const auto& [k, v] : info.entries)
      if (k->kind == Kind::String && k->text == "little_endian" && v->kind == Kind::Bool)
        big_endian_ = !v->boolean;
  }

  // After the key list: for each key in the list's order, int64 numel then numel * itemsize bytes.
  // The item size comes from the key's persistent id in the object pickle.
  void index_storages(const pickle::Value& keys, size_t pos) {
    if (keys.kind != Kind::List) fail("{}: legacy torch file: storage key list is not a list", path_);
    std::unordered_map<std::string, StorageRef> by_key;
    for (const pickle::Value* pid : doc_.persistent_ids) {
      StorageRef s = torch_detail::parse_storage(*pid, path_);
      by_key.emplace(s.key, s);
    }
    const uint64_t size = file_.size();
    for (const pickle::Value* k : keys.items) {
      if (k->kind != Kind::String) fail("{}: legacy torch file: storage key is not a str", path_);
      auto it = by_key.find(k->text);
      if (it == by_key.end())
        fail("{}: legacy torch file: storage '{}' is listed but no tensor uses it", path_, k->text);
      if (size - pos < 8)
        fail("{}: legacy torch file: truncated at storage '{}' (byte {})", path_, k->text, pos);
      int64_t numel;
      std::memcpy(&numel, file_.data() + pos, 8);
      if (big_endian_) numel = static_cast<int64_t>(__builtin_bswap64(static_cast<uint64_t>(numel)));
      pos += 8;
      if (numel < 0 || static_cast<uint64_t>(numel) != it->second.numel)
        fail("{}: legacy torch file: storage '{}' has {} elements in the file, {} in its persistent id",
             path_, k->text, numel, it->second.numel);
      const uint64_t bytes = it->second.numel * it->second.itemsize;
      if (bytes > size - pos)
        fail("{}: legacy torch file: storage '{}' needs {} bytes at byte {}, the file has {} left",
             path_, k->text, bytes, pos, size - pos);
      storages_[k->text] = {pos, it->second.numel};
      pos += bytes;
    }
  }

  void check_storage(const TensorRef& r) const {
    if (!storages_.count(r.storage.key))
      fail("{}: legacy torch file: storage '{}' of tensor '{}' is missing from the storage list",
           path_, r.storage.key, r.name);
  }

  struct Fd {  // closed also when the constructor throws
    explicit Fd(const std::string& path) : fd(::open(path.c_str(), O_RDONLY)) {}
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int fd;
  };

  MappedFile file_;
  Fd fd_;
  pickle::Document doc_;
  std::map<std::string, Placed> storages_;
};

}  // namespace

std::unique_ptr<CheckpointReader> open_torch_checkpoint(const std::string& path) {
  unsigned char head[4] = {0, 0, 0, 0};
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("{}: cannot open ({})", path, std::strerror(errno));
  const size_t n = std::fread(head, 1, 4, f);
  std::fclose(f);
  if (n == 4 && std::memcmp(head, "PK\x03\x04", 4) == 0) return std::make_unique<TorchZipReader>(path);
  return std::make_unique<TorchLegacyReader>(path);
}

}  // namespace bertrt::convert
