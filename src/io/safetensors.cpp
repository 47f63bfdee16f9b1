#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/half.h"
#include "core/json_excerpt.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; a big-endian host needs byte swaps here");

namespace bertrt {

namespace {

using json = nlohmann::json;

// The safetensors library refuses headers above 100 MB (HEADER_SIZE_LIMIT); so do we, which also
// stops a garbage length from making us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// numel * itemsize with overflow detection; false when it does not fit in 64 bits.
bool byte_count(const std::vector<int64_t>& shape, size_t itemsize, uint64_t* out) {
  uint64_t n = itemsize;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  *out = n;
  return true;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Parses the header JSON, failing on syntax errors and on duplicate top-level keys (nlohmann
// would silently keep the last one; a duplicate tensor name is a corrupt file).
json parse_header(const std::string& path, const char* begin, const char* end) {
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) {
      const std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(begin, end, cb);
  } catch (const json::exception& e) {
    fail("{}: safetensors header is not valid JSON: {}", path, e.what());
  }
  if (!duplicate.empty()) fail("{}: safetensors header names tensor '{}' twice", path, duplicate);
  if (!header.is_object()) fail("{}: safetensors header must be a JSON object", path);
  return header;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& j) {
  if (!j.is_object()) fail("{}: __metadata__ must be an object of strings", path);
  std::map<std::string, std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string())
      fail("{}: __metadata__['{}'] must be a string, got {}", path, it.key(),
           json_excerpt(it.value()));
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

struct Entry {
  SafetensorsTensor t;
  uint64_t begin = 0, end = 0;
};

uint64_t offset_value(const std::string& path, const std::string& name, const json& v) {
  if (!v.is_number_unsigned())
    fail("{}: tensor '{}': data_offsets must be non-negative integers, got {}", path, name,
         json_excerpt(v));
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& path, const std::string& name, const json& j) {
  if (!j.is_object())
    fail("{}: tensor '{}': expected an object, got {}", path, name, json_excerpt(j));
  Entry e;
  e.t.name = name;
  const auto dtype = j.find("dtype");
  if (dtype == j.end() || !dtype->is_string()) fail("{}: tensor '{}': missing string 'dtype'", path, name);
  e.t.dtype = dtype->get<std::string>();
  const size_t itemsize = safetensors_dtype_size(e.t.dtype);
  if (itemsize == 0) fail("{}: tensor '{}': unknown dtype '{}'", path, name, e.t.dtype);

  const auto shape = j.find("shape");
  if (shape == j.end() || !shape->is_array()) fail("{}: tensor '{}': missing array 'shape'", path, name);
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail("{}: tensor '{}': shape entries must be non-negative integers, got {}", path, name,
           json_excerpt(*shape));
    e.t.shape.push_back(d.get<int64_t>());
  }

  const auto offs = j.find("data_offsets");
  if (offs == j.end() || !offs->is_array() || offs->size() != 2)
    fail("{}: tensor '{}': 'data_offsets' must be [begin, end]", path, name);
  e.begin = offset_value(path, name, (*offs)[0]);
  e.end = offset_value(path, name, (*offs)[1]);
  if (e.end < e.begin) fail("{}: tensor '{}': data_offsets [{}, {}] end before begin", path, name, e.begin, e.end);

  uint64_t expect = 0;
  if (!byte_count(e.t.shape, itemsize, &expect) || expect != e.end - e.begin)
    fail("{}: tensor '{}': shape {} x {} bytes ({}) needs {} bytes but data_offsets [{}, {}] hold {}", path,
         name, shape_str(e.t.shape), itemsize, e.t.dtype, expect, e.begin, e.end, e.end - e.begin);
  e.t.nbytes = static_cast<size_t>(e.end - e.begin);
  return e;
}

// The data region must be covered exactly: sorted by offset, each tensor starts where the previous
// ended, the first at 0 and the last at the end of the file (safetensors spec: "no holes").
void check_coverage(const std::string& path, std::vector<Entry>& entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  std::string prev = "(start of data)";
  for (const Entry& e : entries) {
    if (e.end > data_size)
      fail("{}: tensor '{}': data_offsets [{}, {}] run past the end of the data region ({} bytes; file "
           "truncated?)", path, e.t.name, e.begin, e.end, data_size);
    if (e.begin < pos)
      fail("{}: tensor '{}': data_offsets [{}, {}] overlap tensor '{}' (ends at {})", path, e.t.name, e.begin,
           e.end, prev, pos);
    if (e.begin > pos)
      fail("{}: tensor '{}': data_offsets start at {} leaving a hole after '{}' (ends at {})", path, e.t.name,
           e.begin, prev, pos);
    pos = e.end;
    prev = e.t.name;
  }
  if (pos != data_size)
    fail("{}: tensors cover {} bytes but the data region holds {} (trailing bytes not indexed)", path, pos,
         data_size);
}

}  // namespace

size_t safetensors_dtype_size(const std::string& d) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2},
      {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},    {"U32", 4},     {"F32", 4},
      {"I64", 8},  {"U64", 8}, {"F64", 8}};
  const auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  const uint8_t* base = f.file_.data();
  const uint64_t size = f.file_.size();
  if (size < 8) fail("{}: {} bytes is too small for a safetensors file (8-byte header length)", path, size);
  const uint64_t n = load<uint64_t>(base);
  if (n > kMaxHeaderBytes)
    fail("{}: safetensors header length {} exceeds the 100 MB limit (not a safetensors file?)", path, n);
  if (8 + n > size)
    fail("{}: safetensors header length {} runs past the end of the file ({} bytes; truncated?)", path, n, size);

  const char* hbegin = reinterpret_cast<const char*>(base + 8);
  const json header = parse_header(path, hbegin, hbegin + n);
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      f.metadata_ = parse_metadata(path, it.value());
    else
      entries.push_back(parse_entry(path, it.key(), it.value()));
  }
  const uint64_t data_size = size - 8 - n;
  check_coverage(path, entries, data_size);
  const uint8_t* data = base + 8 + n;
  for (Entry& e : entries) {
    e.t.data = data + e.begin;
    f.index_[e.t.name] = f.tensors_.size();
    f.tensors_.push_back(std::move(e.t));
  }
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsTensor& SafetensorsFile::at(const std::string& name) const {
  const SafetensorsTensor* t = find(name);
  if (!t) fail("{}: no tensor named '{}' ({} tensors in the file)", path(), name, tensors_.size());
  return *t;
}

std::vector<float> SafetensorsFile::to_f32(const std::string& name) const {
  const SafetensorsTensor& t = at(name);
  const size_t n = t.nbytes / safetensors_dtype_size(t.dtype);
  std::vector<float> out(n);
  const uint8_t* p = t.data;
  if (t.dtype == "F32") {
    if (n) std::memcpy(out.data(), p, t.nbytes);
  } else if (t.dtype == "F16") {
    for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load<uint16_t>(p + 2 * i));
  } else if (t.dtype == "BF16") {
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load<uint16_t>(p + 2 * i));
  } else if (t.dtype == "F64") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
  } else {
    fail("{}: tensor '{}' has dtype {}, expected a float dtype (F32, F16, BF16, F64)", path(), name, t.dtype);
  }
  return out;
}

std::vector<int64_t> SafetensorsFile::to_i64(const std::string& name) const {
  const SafetensorsTensor& t = at(name);
  const std::string& d = t.dtype;
  static const std::set<std::string> ints = {"I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64", "BOOL"};
  if (!ints.count(d)) fail("{}: tensor '{}' has dtype {}, expected an integer or BOOL dtype", path(), name, d);
  const size_t n = t.nbytes / safetensors_dtype_size(d);
  std::vector<int64_t> out(n);
  const uint8_t* p = t.data;
  for (size_t i = 0; i < n; ++i) {
    if (d == "I64") out[i] = load<int64_t>(p + 8 * i);
    else if (d == "I32") out[i] = load<int32_t>(p + 4 * i);
    else if (d == "I16") out[i] = load<int16_t>(p + 2 * i);
    else if (d == "I8") out[i] = load<int8_t>(p + i);
    else if (d == "U8") out[i] = load<uint8_t>(p + i);
    else if (d == "U16") out[i] = load<uint16_t>(p + 2 * i);
    else if (d == "U32") out[i] = load<uint32_t>(p + 4 * i);
    else if (d == "BOOL") out[i] = load<uint8_t>(p + i) != 0;
    else {  // U64
      const uint64_t v = load<uint64_t>(p + 8 * i);
      if (v > uint64_t(std::numeric_limits<int64_t>::max()))
        fail("{}: tensor '{}': U64 element {} = {} does not fit in int64", path(), name, i, v);
      out[i] = static_cast<int64_t>(v);
    }
  }
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  AtomicFile out(path);
  write_safetensors(out, tensors, metadata);
  out.commit();
}

void write_safetensors(AtomicFile& out, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string& path = out.path();
  // Validate and build the header before touching the filesystem.
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      fail("{}: cannot write a tensor named '{}'", path, t.name);
    if (header.contains(t.name)) fail("{}: tensor '{}' given twice", path, t.name);
    const size_t itemsize = safetensors_dtype_size(t.dtype);
    if (itemsize == 0) fail("{}: tensor '{}': unknown dtype '{}'", path, t.name, t.dtype);
    for (int64_t d : t.shape)
      if (d < 0) fail("{}: tensor '{}': negative dimension in shape {}", path, t.name, shape_str(t.shape));
    uint64_t expect = 0;
    if (!byte_count(t.shape, itemsize, &expect) || expect != t.nbytes)
      fail("{}: tensor '{}': shape {} of {} needs {} bytes, got {}", path, t.name, shape_str(t.shape), t.dtype,
           expect, t.nbytes);
    if (t.nbytes && !t.data) fail("{}: tensor '{}': null data", path, t.name);
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // data starts 8-byte aligned
  const uint64_t n = text.size();

  out.write(&n, sizeof n);
  out.write(text.data(), text.size());
  for (const SafetensorsTensor& t : tensors) out.write(t.data, t.nbytes);
}

}  // namespace bertrt
