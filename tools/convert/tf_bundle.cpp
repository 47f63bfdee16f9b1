#include "convert/tf_bundle.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/crc32c.h"
#include "convert/sstable.h"
#include "convert/varint.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;

// ---- protobuf wire format (developers.google.com/protocol-buffers/docs/encoding) ----

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// One field of a message; for kBytes, [data, data + size) is the payload.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;  // kVarint, kFixed64, kFixed32 values
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Walks the fields of one serialized message; `what` names it in errors.
class ProtoReader {
 public:
  ProtoReader(const uint8_t* p, size_t n, std::string what)
      : p_(p), end_(p + n), what_(std::move(what)) {}
  ProtoReader(const Field& f, std::string what) : ProtoReader(f.data, f.size, std::move(what)) {}

  bool next(Field* f) {
    if (p_ == end_) return false;
    uint64_t tag;
    if (!get_varint64(&p_, end_, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
      fail("{}: corrupt field tag", what_);
    f->number = static_cast<uint32_t>(tag >> 3);
    f->wire = static_cast<uint32_t>(tag & 7);
    switch (f->wire) {
      case kVarint:
        if (!get_varint64(&p_, end_, &f->varint))
          fail("{}: field {}: bad varint", what_, f->number);
        break;
      case kFixed64:
        need(8, f->number);
        f->varint = load_le64(p_);
        p_ += 8;
        break;
      case kFixed32:
        need(4, f->number);
        f->varint = load_le32(p_);
        p_ += 4;
        break;
      case kBytes: {
        uint64_t len;
        if (!get_varint64(&p_, end_, &len)) fail("{}: field {}: bad length varint", what_, f->number);
        need(len, f->number);
        f->data = p_;
        f->size = static_cast<size_t>(len);
        p_ += len;
        break;
      }
      default:  // groups (3, 4) are proto2-only and absent from these messages
        fail("{}: field {}: unsupported wire type {}", what_, f->number, f->wire);
    }
    return true;
  }

 private:
  void need(uint64_t n, uint32_t number) const {
    if (n > static_cast<uint64_t>(end_ - p_))
      fail("{}: field {}: {} bytes claimed, {} left in the message", what_, number, n, end_ - p_);
  }
  const uint8_t* p_;
  const uint8_t* end_;
  std::string what_;
};

// ---- BundleHeaderProto / BundleEntryProto (tensor_bundle.proto) ----

struct Header {
  int64_t num_shards = 0;
  uint64_t endianness = 0;  // LITTLE = 0, BIG = 1
};

Header parse_header(const std::string& value, const std::string& where) {
  Header h;
  ProtoReader r(reinterpret_cast<const uint8_t*>(value.data()), value.size(),
                where + ": BundleHeaderProto");
  Field f;
  while (r.next(&f)) {
    if (f.number == 1 && f.wire == kVarint) h.num_shards = static_cast<int32_t>(f.varint);
    if (f.number == 2 && f.wire == kVarint) h.endianness = f.varint;
  }
  return h;
}

struct Entry {
  uint64_t dtype = 0;
  std::vector<int64_t> shape;
  int64_t shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t crc32c = 0;  // masked
  bool has_slices = false;
};

std::vector<int64_t> parse_shape(const Field& shape_field, const std::string& what) {
  std::vector<int64_t> dims;
  ProtoReader r(shape_field, what);
  Field f;
  while (r.next(&f)) {
    if (f.number == 3 && f.wire == kVarint && f.varint) fail("{}: unknown rank", what);
    if (f.number != 2 || f.wire != kBytes) continue;  // TensorShapeProto.dim
    int64_t size = 0;
    ProtoReader d(f, what + ": dim");
    Field g;
    while (d.next(&g))
      if (g.number == 1 && g.wire == kVarint) size = static_cast<int64_t>(g.varint);
    if (size < 0) fail("{}: unknown (negative) dimension {}", what, size);
    dims.push_back(size);
  }
  return dims;
}

Entry parse_entry(const std::string& value, const std::string& what) {
  Entry e;
  ProtoReader r(reinterpret_cast<const uint8_t*>(value.data()), value.size(), what);
  Field f;
  while (r.next(&f)) {
    switch (f.number) {
      case 1: if (f.wire == kVarint) e.dtype = f.varint; break;
      case 2: if (f.wire == kBytes) e.shape = parse_shape(f, what + ": shape"); break;
      case 3: if (f.wire == kVarint) e.shard_id = static_cast<int32_t>(f.varint); break;
      case 4: if (f.wire == kVarint) e.offset = static_cast<int64_t>(f.varint); break;
      case 5: if (f.wire == kVarint) e.size = static_cast<int64_t>(f.varint); break;
      case 6: if (f.wire == kFixed32) e.crc32c = static_cast<uint32_t>(f.varint); break;
      case 7: e.has_slices = true; break;
      default: break;  // unknown fields are skipped, as protobuf parsers do
    }
  }
  return e;
}

// TF DataType enum (tensorflow/core/framework/types.proto) → safetensors name and item size.
struct DtypeInfo {
  const char* name;
  size_t itemsize;  // 0 for STRING
};

std::optional<DtypeInfo> dtype_info(uint64_t dt) {
  switch (dt) {
    case 1: return DtypeInfo{"F32", 4};
    case 2: return DtypeInfo{"F64", 8};
    case 3: return DtypeInfo{"I32", 4};
    case 4: return DtypeInfo{"U8", 1};
    case 5: return DtypeInfo{"I16", 2};
    case 6: return DtypeInfo{"I8", 1};
    case 7: return DtypeInfo{"STRING", 0};
    case 9: return DtypeInfo{"I64", 8};
    case 10: return DtypeInfo{"BOOL", 1};
    case 14: return DtypeInfo{"BF16", 2};
    case 19: return DtypeInfo{"F16", 2};
    default: return std::nullopt;
  }
}

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// "dir/x.ckpt" from "dir/x.ckpt", "dir/x.ckpt.index" or a directory with one *.index.
std::string bundle_prefix(const std::string& path) {
  const std::string ext = ".index";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    return path.substr(0, path.size() - ext.size());
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ext) found.push_back(e.path().string());
    if (found.size() != 1)
      fail("{}: expected exactly one TF checkpoint *.index in the folder, found {}", path,
           found.size());
    return found[0].substr(0, found[0].size() - ext.size());
  }
  return path;
}

class TfBundleReader final : public CheckpointReader {
 public:
  explicit TfBundleReader(const std::string& path) : prefix_(bundle_prefix(path)) {
    const std::string index_path = prefix_ + ".index";
    std::error_code ec;
    if (!fs::is_regular_file(index_path, ec))
      fail("{}: TF checkpoint index not found (from '{}')", index_path, path);
    const std::vector<SstableEntry> kv = read_sstable_file(index_path);
    if (kv.empty() || !kv[0].key.empty())
      fail("{}: no bundle header (the empty key) in the index", index_path);
    const Header h = parse_header(kv[0].value, index_path);
    if (h.endianness != 0)
      fail("{}: big-endian tensor bundle (endianness {}); only little-endian bundles are supported",
           index_path, h.endianness);
    if (h.num_shards < 1 || h.num_shards > 99999)
      fail("{}: bundle header num_shards {} is not in [1, 99999]", index_path, h.num_shards);
    num_shards_ = static_cast<int>(h.num_shards);
    shards_.resize(num_shards_);
    for (size_t i = 1; i < kv.size(); ++i) add(kv[i], index_path);
    check_disjoint(index_path);
  }

  std::string format() const override { return "tf1-bundle"; }
  const std::vector<CheckpointTensor>& tensors() const override { return tensors_; }

  std::vector<uint8_t> read(size_t i) const override {
    if (i >= tensors_.size())
      fail("{}.index: tensor index {} out of range ({} tensors)", prefix_, i, tensors_.size());
    const CheckpointTensor& t = tensors_[i];
    const Entry& e = entries_[i];
    const MappedFile& shard = open_shard(e.shard_id, t.name);
    const uint64_t off = static_cast<uint64_t>(e.offset), n = static_cast<uint64_t>(e.size);
    if (off > shard.size() || n > shard.size() - off)
      fail("{}: tensor '{}' at offset {} size {} runs past the end of the {}-byte shard "
           "(truncated file?)",
           shard.path(), t.name, off, n, shard.size());
    const uint8_t* p = shard.data() + off;
    const uint32_t actual = t.dtype == "STRING" ? string_crc(shard, t, p, static_cast<size_t>(n))
                                                : crc32c::value(p, static_cast<size_t>(n));
    const uint32_t stored = crc32c::unmask(e.crc32c);
    if (actual != stored)
      fail("{}: tensor '{}': crc32c mismatch (index says 0x{:08x}, data gives 0x{:08x}): the shard "
           "is corrupt or does not belong to this index",
           shard.path(), t.name, stored, actual);
    return std::vector<uint8_t>(p, p + n);
  }

 private:
  // tensor_bundle.cc WriteStringTensor lays a string tensor out as varint64 lengths, the masked
  // crc32c of those lengths, then the bytes; its crc32c covers each length as a little-endian
  // uint32 (uint64 above 4 GiB) rather than the varint bytes, then the length checksum and the
  // strings. Checks the layout and the length checksum; returns the tensor's crc32c.
  uint32_t string_crc(const MappedFile& shard, const CheckpointTensor& t, const uint8_t* p,
                      size_t n) const {
    auto bad = [&](const char* what) {
      fail("{}: string tensor '{}': {}", shard.path(), t.name, what);
    };
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    const uint8_t* q = p;
    const uint8_t* end = p + n;
    uint32_t crc = 0;
    uint64_t total = 0;
    for (uint64_t k = 0; k < numel; ++k) {
      uint64_t len;
      if (!get_varint64(&q, end, &len)) bad("bad length varint (corrupt or truncated)");
      uint8_t le[8];
      for (int b = 0; b < 8; ++b) le[b] = static_cast<uint8_t>(len >> (8 * b));
      crc = crc32c::extend(crc, le, len <= 0xffffffffu ? 4 : 8);
      if (len > n) bad("a string is longer than the tensor's bytes");
      total += len;
    }
    if (static_cast<size_t>(end - q) < 4) bad("no room for the length checksum");
    if (crc32c::unmask(load_le32(q)) != crc) bad("length checksum mismatch (corrupt data)");
    if (total != static_cast<uint64_t>(end - q) - 4) bad("string lengths do not add up to its size");
    return crc32c::extend(crc, q, static_cast<size_t>(end - q));
  }

  std::string shard_path(int64_t id) const {
    return fmt::format("{}.data-{:05d}-of-{:05d}", prefix_, id, num_shards_);
  }

  void add(const SstableEntry& kv, const std::string& index_path) {
    // Slices of partitioned variables have keys in TF's OrderedCode encoding, starting with 0.
    if (kv.key[0] == '\0')
      fail("{}: the bundle holds a partitioned variable (slice key); partitioned tensors are not "
           "supported, re-save the checkpoint without partitioning",
           index_path);
    const std::string what = fmt::format("{}: tensor '{}'", index_path, kv.key);
    Entry e = parse_entry(kv.value, what);
    if (e.has_slices)
      fail("{}: partitioned variable (TensorSliceProto slices); partitioned tensors are not "
           "supported, re-save the checkpoint without partitioning",
           what);
    const auto info = dtype_info(e.dtype);
    if (!info)
      fail("{}: unsupported TF dtype {} (supported: float, double, int32, uint8, int16, int8, "
           "string, int64, bool, bfloat16, half)",
           what, e.dtype);
    if (e.shard_id < 0 || e.shard_id >= num_shards_)
      fail("{}: shard_id {} outside the bundle's {} shards", what, e.shard_id, num_shards_);
    if (e.offset < 0 || e.size < 0) fail("{}: negative offset {} or size {}", what, e.offset, e.size);
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      if (d != 0 && numel > (uint64_t(1) << 62) / static_cast<uint64_t>(d))
        fail("{}: shape {} is too large", what, shape_str(e.shape));
      numel *= static_cast<uint64_t>(d);
    }
    CheckpointTensor t;
    t.name = kv.key;
    t.dtype = info->name;
    t.shape = e.shape;
    t.nbytes = numel * info->itemsize;
    t.location = fs::path(shard_path(e.shard_id)).filename().string();
    if (info->itemsize != 0 && t.nbytes != static_cast<uint64_t>(e.size))
      fail("{}: entry size {} bytes, but shape {} of {} needs {}", what, e.size,
           shape_str(e.shape), t.dtype, t.nbytes);
    tensors_.push_back(std::move(t));
    entries_.push_back(e);
  }

  // TF writes each tensor's bytes once: entries whose ranges of a shard overlap would let a few
  // stored bytes stand for any number of tensors (each read and checked again). Sorted, so
  // O(n log n).
  void check_disjoint(const std::string& index_path) const {
    std::vector<size_t> order(entries_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Entry &x = entries_[a], &y = entries_[b];
      return x.shard_id != y.shard_id ? x.shard_id < y.shard_id
             : x.offset != y.offset   ? x.offset < y.offset
                                      : x.size < y.size;
    });
    const Entry* prev = nullptr;
    size_t prev_i = 0;
    for (size_t i : order) {
      const Entry& e = entries_[i];
      if (e.size == 0) continue;
      if (prev && prev->shard_id == e.shard_id &&
          uint64_t(e.offset) < uint64_t(prev->offset) + uint64_t(prev->size))
        fail("{}: tensors '{}' and '{}' overlap in shard {} (bytes [{}, +{}) and [{}, +{})): each "
             "byte of a shard belongs to one tensor (a damaged or hostile file)",
             index_path, tensors_[prev_i].name, tensors_[i].name, e.shard_id, prev->offset,
             prev->size, e.offset, e.size);
      prev = &e;
      prev_i = i;
    }
  }

  const MappedFile& open_shard(int64_t id, const std::string& tensor) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<MappedFile>& slot = shards_[static_cast<size_t>(id)];
    if (!slot) {
      const std::string path = shard_path(id);
      std::error_code ec;
      if (!fs::exists(path, ec))
        fail("{}: missing data shard {} of {} (needed for tensor '{}'); the index lists the "
             "tensors, but their bytes are in this file",
             path, id, num_shards_, tensor);
      slot = MappedFile::open(path);
    }
    return *slot;
  }

  std::string prefix_;
  int num_shards_ = 0;
  std::vector<CheckpointTensor> tensors_;
  std::vector<Entry> entries_;
  mutable std::mutex mutex_;
  mutable std::vector<std::optional<MappedFile>> shards_;
};

}  // namespace

std::unique_ptr<CheckpointReader> open_tf_bundle(const std::string& path) {
  return std::make_unique<TfBundleReader>(path);
}

}  // namespace bertrt::convert
