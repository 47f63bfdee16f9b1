// TensorRecord helpers: dtype facts, consistency checks and conversion to f32.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "io/model_file.h"

namespace bertrt {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i8: return "i8";
    case DType::i32: return "i32";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i8: return 1;
    case DType::i32: return 4;
  }
  return 0;
}

int64_t TensorRecord::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void validate_tensor_record(const TensorRecord& t, const std::string& where) {
  const std::string id = where + ": tensor '" + t.name + "'";
  if (t.name.empty()) fail("{}: a tensor has an empty name", where);
  uint64_t bytes = dtype_size(t.dtype);
  if (bytes == 0) fail("{}: invalid dtype {}", id, static_cast<int>(t.dtype));
  for (int64_t d : t.shape) {
    if (d < 0) fail("{}: negative dimension in shape {}", id, shape_str(t.shape));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      fail("{}: shape {} is too large", id, shape_str(t.shape));
  }
  if (bytes != t.nbytes)
    fail("{}: shape {} of {} needs {} bytes, the record holds {}", id, shape_str(t.shape),
         dtype_name(t.dtype), bytes, t.nbytes);
  if (t.nbytes > 0 && t.data == nullptr) fail("{}: {} bytes but no data", id, t.nbytes);
  const bool integer = t.dtype == DType::i8 || t.dtype == DType::i32;
  if (!integer && (!t.scales.empty() || !t.zero_points.empty()))
    fail("{}: a quantization record on a {} tensor (only i8 and i32 tensors are quantized)", id,
         dtype_name(t.dtype));
  if (t.scales.empty()) {
    if (!t.zero_points.empty()) fail("{}: zero_points without scales", id);
    return;
  }
  if (t.axis == -1) {
    if (t.scales.size() != 1)
      fail("{}: per-tensor quantization (axis -1) needs 1 scale, got {}", id, t.scales.size());
  } else {
    if (t.axis < 0 || t.axis >= static_cast<int>(t.shape.size()))
      fail("{}: quantization axis {} outside the {}-d shape {}", id, t.axis, t.shape.size(), shape_str(t.shape));
    if (static_cast<int64_t>(t.scales.size()) != t.shape[t.axis])
      fail("{}: {} scales for axis {} of shape {} (expected {})", id, t.scales.size(), t.axis,
           shape_str(t.shape), t.shape[t.axis]);
  }
  const size_t nz = t.zero_points.size();
  if (nz > 1 && nz != t.scales.size())
    fail("{}: {} zero_points for {} scales (expected 0, 1 or one per scale)", id, nz, t.scales.size());
  // Values that dequantize to finite floats: a NaN, infinite, zero, negative or huge scale, or a
  // zero point outside the integers' range, turns every answer into NaN or inf.
  const float most = max_quant_scale(t.dtype);
  for (size_t i = 0; i < t.scales.size(); ++i)
    if (!(t.scales[i] > 0.0f) || !(t.scales[i] <= most))
      fail("{}: quantization scale {} is {}: scales must be finite, positive and at most {:g} "
           "(so that dequantized {} values stay finite)",
           id, i, t.scales[i], most, dtype_name(t.dtype));
  const int64_t lo = t.dtype == DType::i8 ? -128 : std::numeric_limits<int32_t>::min();
  const int64_t hi = t.dtype == DType::i8 ? 127 : std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < nz; ++i)
    if (t.zero_points[i] < lo || t.zero_points[i] > hi)
      fail("{}: zero point {} is {}, outside the {} range [{}, {}]", id, i, t.zero_points[i],
           dtype_name(t.dtype), lo, hi);
}

float max_quant_scale(DType dtype) {
  // qmax - qmin: 255 for i8, 2^32 - 1 for i32.
  const double span = dtype == DType::i8 ? 255.0 : 4294967295.0;
  return static_cast<float>(double(FLT_MAX) / span);
}

template <typename T>
static T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// real = (q - zero_point[c]) * scale[c], c = index along `axis` (or 0 for per-tensor).
template <typename Q>
static void dequantize(const TensorRecord& t, float* out) {
  const size_t n = static_cast<size_t>(t.numel());
  size_t inner = 1, channels = 1;
  if (t.axis >= 0) {
    channels = static_cast<size_t>(t.shape[t.axis]);
    for (size_t d = static_cast<size_t>(t.axis) + 1; d < t.shape.size(); ++d) inner *= static_cast<size_t>(t.shape[d]);
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t c = channels == 1 ? 0 : (i / inner) % channels;
    const int64_t zp = t.zero_points.empty() ? 0 : t.zero_points[t.zero_points.size() == 1 ? 0 : c];
    // In double: a corrupted zero point (e.g. INT64_MIN) must not overflow int64 (UBSan); exact for
    // every |q − zp| < 2^53, so real files give the same floats as an integer difference.
    out[i] = static_cast<float>(static_cast<double>(load<Q>(t.data + i * sizeof(Q))) -
                                static_cast<double>(zp)) *
             t.scales[c];
  }
}

void tensor_to_f32(const TensorRecord& t, float* out) {
  validate_tensor_record(t, "tensor_to_f32");
  const size_t n = static_cast<size_t>(t.numel());
  switch (t.dtype) {
    case DType::f32:
      if (n) std::memcpy(out, t.data, t.nbytes);
      return;
    case DType::f16:
      for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load<uint16_t>(t.data + 2 * i));
      return;
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load<uint16_t>(t.data + 2 * i));
      return;
    case DType::i8:
    case DType::i32:
      if (t.scales.empty())
        fail("tensor '{}': {} data has no quantization scales, cannot convert to f32", t.name, dtype_name(t.dtype));
      return t.dtype == DType::i8 ? dequantize<int8_t>(t, out) : dequantize<int32_t>(t, out);
  }
  fail("tensor '{}': invalid dtype", t.name);
}

std::vector<float> tensor_to_f32(const TensorRecord& t) {
  validate_tensor_record(t, "tensor_to_f32");
  std::vector<float> out(static_cast<size_t>(t.numel()));
  tensor_to_f32(t, out.data());
  return out;
}

}  // namespace bertrt
