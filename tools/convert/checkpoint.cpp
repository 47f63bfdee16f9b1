#include "convert/checkpoint.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace bertrt::convert {
namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

size_t float_itemsize(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  if (dtype == "F64") return 8;
  return 0;
}

}  // namespace

std::vector<float> bytes_to_f32(const CheckpointTensor& t, const std::vector<uint8_t>& bytes) {
  const size_t size = float_itemsize(t.dtype);
  if (size == 0)
    fail("{}: tensor '{}' has dtype {}, expected a float dtype (F32, F16, BF16, F64)", t.location,
         t.name, t.dtype);
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  if (bytes.size() != static_cast<size_t>(numel) * size)
    fail("{}: tensor '{}': {} bytes for {} elements of {}", t.location, t.name, bytes.size(), numel,
         t.dtype);
  std::vector<float> out(static_cast<size_t>(numel));
  const uint8_t* p = bytes.data();
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == "F32") out[i] = load<float>(p + 4 * i);
    else if (t.dtype == "F16") out[i] = f16_to_f32(load<uint16_t>(p + 2 * i));
    else if (t.dtype == "BF16") out[i] = bf16_to_f32(load<uint16_t>(p + 2 * i));
    else out[i] = static_cast<float>(load<double>(p + 8 * i));
  }
  return out;
}

}  // namespace bertrt::convert
