#include "convert/torch_state_dict.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <fmt/ranges.h>

#include "core/error.h"

namespace bertrt::convert::torch_detail {
namespace {

using pickle::Kind;
using pickle::Value;

// Bounds for sizes: anything larger cannot be a tensor in a file (and keeps products in range).
constexpr uint64_t kMaxElements = uint64_t{1} << 60;
constexpr int kMaxDepth = 64;

struct StorageType {
  const char* global;
  const char* dtype;
  size_t itemsize;
};
const StorageType kStorageTypes[] = {
    {"torch.FloatStorage", "F32", 4}, {"torch.DoubleStorage", "F64", 8},
    {"torch.HalfStorage", "F16", 2},  {"torch.BFloat16Storage", "BF16", 2},
    {"torch.LongStorage", "I64", 8},  {"torch.IntStorage", "I32", 4},
    {"torch.ShortStorage", "I16", 2}, {"torch.CharStorage", "I8", 1},
    {"torch.ByteStorage", "U8", 1},   {"torch.BoolStorage", "BOOL", 1},
};

bool is_int(const Value* v) { return v->kind == Kind::Int; }

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what, const std::string& name) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxElements)
    fail("{}: tensor '{}': size overflows", what, name);
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what, const std::string& name) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxElements)
    fail("{}: tensor '{}': size overflows", what, name);
  return r;
}

std::vector<int64_t> int_tuple(const Value* v, const char* field, const std::string& what,
                               const std::string& name) {
  if (v->kind != Kind::Tuple)
    fail("{}: tensor '{}': {} is a {}, expected a tuple of ints", what, name, field,
         pickle::kind_name(v->kind));
  std::vector<int64_t> out;
  for (const Value* x : v->items) {
    if (!is_int(x) || x->integer < 0)
      fail("{}: tensor '{}': {} must hold non-negative ints", what, name, field);
    out.push_back(x->integer);
  }
  return out;
}

bool is_tensor_rebuild(const std::string& callable) {
  return callable == "torch._utils._rebuild_tensor_v2" || callable == "torch._utils._rebuild_tensor" ||
         callable == "torch._utils._rebuild_parameter" ||
         callable == "torch._utils._rebuild_parameter_with_state";
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
// _rebuild_tensor(storage, storage_offset, size, stride)
// _rebuild_parameter(data, requires_grad, backward_hooks[, state]) with data one of the above.
TensorRef tensor_of(const Value* v, const std::string& name, const std::string& what) {
  const std::string callable = v->reduce_callable();
  const Value* args = v->items[1];
  if (callable == "torch._utils._rebuild_parameter" ||
      callable == "torch._utils._rebuild_parameter_with_state") {
    const std::string inner = args->items.empty() ? "" : args->items[0]->reduce_callable();
    if (inner != "torch._utils._rebuild_tensor_v2" && inner != "torch._utils._rebuild_tensor")
      fail("{}: tensor '{}': {} of {}, expected a rebuilt tensor", what, name, callable,
           inner.empty() ? "something else" : inner);
    return tensor_of(args->items[0], name, what);
  }
  if (args->items.size() < 4)
    fail("{}: tensor '{}': {} with {} arguments, expected at least 4", what, name, callable,
         args->items.size());
  const Value* pid = args->items[0];
  if (pid->kind != Kind::PersistentId)
    fail("{}: tensor '{}': storage is a {}, expected a persistent id", what, name,
         pickle::kind_name(pid->kind));
  TensorRef t;
  t.name = name;
  t.storage = parse_storage(*pid, what);
  if (!is_int(args->items[1]) || args->items[1]->integer < 0)
    fail("{}: tensor '{}': storage_offset must be a non-negative int", what, name);
  t.storage_offset = static_cast<uint64_t>(args->items[1]->integer);
  t.shape = int_tuple(args->items[2], "size", what, name);
  t.stride = int_tuple(args->items[3], "stride", what, name);
  if (t.shape.size() != t.stride.size())
    fail("{}: tensor '{}': {} sizes but {} strides", what, name, t.shape.size(), t.stride.size());
  // numel, and the last element addressed: storage_offset + sum((size_k - 1) * stride_k).
  uint64_t numel = 1, last = t.storage_offset;
  for (size_t k = 0; k < t.shape.size(); ++k) {
    numel = checked_mul(numel, static_cast<uint64_t>(t.shape[k]), what, name);
    if (t.shape[k] > 0)
      last = checked_add(last, checked_mul(static_cast<uint64_t>(t.shape[k] - 1),
                                           static_cast<uint64_t>(t.stride[k]), what, name),
                         what, name);
  }
  t.numel = numel;
  checked_mul(numel, t.storage.itemsize, what, name);
  if (numel > 0 && last >= t.storage.view_numel)
    fail("{}: tensor '{}' needs storage element {} (offset {}, shape {}, stride {}) but storage '{}' "
         "has {} elements",
         what, name, last, t.storage_offset, fmt::join(t.shape, "x"), fmt::join(t.stride, ","),
         t.storage.key, t.storage.view_numel);
  return t;
}

std::string key_text(const Value* key, bool* ok) {
  *ok = true;
  if (key->kind == Kind::String) return key->text;
  if (key->kind == Kind::Int) return std::to_string(key->integer);
  *ok = false;
  return "";
}

std::string join(const std::string& prefix, const std::string& part) {
  return prefix.empty() ? part : prefix + "." + part;
}

class Collector {
 public:
  Collector(const pickle::Document& doc, const std::string& what)
      : what_(what), budget_(4 * doc.nodes.size() + 64) {}

  void walk(const Value* v, const std::string& name, bool named, int depth) {
    if (budget_-- == 0)
      fail("{}: the pickle's containers are shared too often to list its tensors", what_);
    if (depth > kMaxDepth) fail("{}: '{}': nested deeper than {} levels", what_, name, kMaxDepth);
    switch (v->kind) {
      case Kind::Reduce:
        if (is_tensor_rebuild(v->reduce_callable())) {
          if (!named) fail("{}: a tensor under '{}' has a dict key that is not a str or int", what_, name);
          add(tensor_of(v, name, what_));
        }
        break;  // other objects (none are allowlisted today) hold no state-dict tensors
      case Kind::Dict:
        for (const auto& [key, value] : v->entries) {
          bool ok;
          const std::string part = key_text(key, &ok);
          walk(value, join(name, ok ? part : "?"), named && ok, depth + 1);
        }
        break;
      case Kind::List:
      case Kind::Tuple:
        for (size_t k = 0; k < v->items.size(); ++k)
          walk(v->items[k], join(name, std::to_string(k)), named, depth + 1);
        break;
      default: break;  // numbers, strings, None, bare storages: not tensors
    }
  }

  std::vector<TensorRef> take() { return std::move(tensors_); }

 private:
  void add(TensorRef t) {
    if (!names_.insert(t.name).second) fail("{}: tensor name '{}' appears twice", what_, t.name);
    tensors_.push_back(std::move(t));
  }

  const std::string& what_;
  size_t budget_;
  std::vector<TensorRef> tensors_;
  std::unordered_set<std::string> names_;
};

// C-contiguous: strides of size-1 dims do not matter.
bool is_contiguous(const TensorRef& t) {
  int64_t expect = 1;
  for (size_t k = t.shape.size(); k-- > 0;) {
    if (t.shape[k] != 1 && t.stride[k] != expect) return false;
    expect *= t.shape[k];
  }
  return true;
}

}  // namespace

bool is_whole_storage(const TensorRef& t) {
  return t.storage.view_offset == 0 && t.storage_offset == 0 && is_contiguous(t);
}

void byteswap(uint8_t* p, size_t n, size_t itemsize) {
  if (itemsize < 2) return;
  for (size_t i = 0; i < n; i += itemsize) std::reverse(p + i, p + i + itemsize);
}

StorageRef parse_storage(const Value& pid, const std::string& what) {
  const Value* t = pid.items.empty() ? nullptr : pid.items[0];
  if (!t || t->kind != Kind::Tuple || (t->items.size() != 5 && t->items.size() != 6) ||
      t->items[0]->kind != Kind::String || t->items[0]->text != "storage")
    fail("{}: persistent id is not ('storage', type, key, location, numel[, view])", what);
  const Value* type = t->items[1];
  const Value* key = t->items[2];
  const Value* numel = t->items[4];
  if (key->kind != Kind::String) fail("{}: storage key is a {}, expected a str", what, pickle::kind_name(key->kind));
  if (!is_int(numel) || numel->integer < 0 || static_cast<uint64_t>(numel->integer) > kMaxElements)
    fail("{}: storage '{}': element count is not a valid int", what, key->text);
  StorageRef s;
  s.key = key->text;
  for (const StorageType& st : kStorageTypes)
    if (type->is_global(st.global)) {
      s.dtype = st.dtype;
      s.itemsize = st.itemsize;
    }
  if (s.itemsize == 0)
    fail("{}: storage '{}' has type {}, expected a torch.*Storage class", what, s.key,
         type->kind == Kind::Global ? type->text : pickle::kind_name(type->kind));
  s.numel = static_cast<uint64_t>(numel->integer);
  s.view_numel = s.numel;
  if (t->items.size() == 6 && t->items[5]->kind != Kind::None) {
    const Value* view = t->items[5];
    if (view->kind != Kind::Tuple || view->items.size() != 3 || !is_int(view->items[1]) ||
        !is_int(view->items[2]) || view->items[1]->integer < 0 || view->items[2]->integer < 0)
      fail("{}: storage '{}': view metadata is not (key, offset, numel)", what, s.key);
    s.view_offset = static_cast<uint64_t>(view->items[1]->integer);
    s.view_numel = static_cast<uint64_t>(view->items[2]->integer);
    if (s.view_offset > s.numel || s.view_numel > s.numel - s.view_offset)
      fail("{}: storage '{}': view [{}, +{}) is outside its {} elements", what, s.key, s.view_offset,
           s.view_numel, s.numel);
  }
  return s;
}

std::vector<TensorRef> collect_tensors(const pickle::Document& doc, const std::string& what) {
  Collector c(doc, what);
  c.walk(doc.root, "", true, 0);
  return c.take();
}

std::vector<uint8_t> gather(const TensorRef& t, const uint8_t* storage, bool swap) {
  const size_t item = t.storage.itemsize;
  std::vector<uint8_t> out(t.numel * item);
  if (t.numel == 0) return out;
  const uint8_t* base = storage + (t.storage.view_offset + t.storage_offset) * item;
  if (is_contiguous(t)) {
    std::memcpy(out.data(), base, out.size());
  } else {  // odometer over the index, last dim fastest
    const size_t rank = t.shape.size();
    std::vector<int64_t> idx(rank, 0);
    uint64_t src = 0;
    for (uint64_t i = 0; i < t.numel; ++i) {
      std::memcpy(out.data() + i * item, base + src * item, item);
      for (size_t k = rank; k-- > 0;) {
        src += static_cast<uint64_t>(t.stride[k]);
        if (++idx[k] < t.shape[k]) break;
        src -= static_cast<uint64_t>(t.stride[k]) * static_cast<uint64_t>(t.shape[k]);
        idx[k] = 0;
      }
    }
  }
  if (swap) byteswap(out.data(), out.size(), item);
  return out;
}

}  // namespace bertrt::convert::torch_detail
