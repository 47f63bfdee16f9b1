#include "convert/tensor_encode.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace bertrt::convert {
namespace {

size_t float_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  if (dtype == "F64") return 8;
  return 0;
}

float load(const std::string& dtype, const uint8_t* p) {
  if (dtype == "F32") {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (dtype == "F64") {
    double v;
    std::memcpy(&v, p, 8);
    return static_cast<float>(v);
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == "F16" ? f16_to_f32(h) : bf16_to_f32(h);
}

int64_t numel_of(const CheckpointTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

void check_size(const CheckpointTensor& t) {
  const size_t size = float_size(t.dtype);
  if (size == 0)
    fail("{}: tensor '{}' has dtype {}, expected a float dtype (F32, F16, BF16, F64)", t.location, t.name, t.dtype);
  if (t.nbytes != static_cast<uint64_t>(numel_of(t)) * size)
    fail("{}: tensor '{}': {} bytes for shape of {} elements of {}", t.location, t.name, t.nbytes, numel_of(t), t.dtype);
}

[[noreturn]] void non_finite(const CheckpointTensor& t, size_t i, float v) {
  fail("{}: tensor '{}' element {} is {} (the checkpoint is broken)", t.location, t.name, i, v);
}

}  // namespace

std::optional<DType> parse_float_dtype(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "f16") return DType::f16;
  if (name == "bf16") return DType::bf16;
  return std::nullopt;
}

const char* safetensors_dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i8: return "I8";
    case DType::i32: return "I32";
  }
  return "?";
}

bool same_encoding(const std::string& src_dtype, DType out) { return src_dtype == safetensors_dtype_name(out); }

std::vector<uint8_t> encode_tensor(const CheckpointTensor& t, const uint8_t* bytes, DType out, bool transpose) {
  check_size(t);
  if (transpose && t.shape.size() != 2) fail("{}: tensor '{}': only 2-D tensors can be transposed", t.location, t.name);
  if (out != DType::f32 && out != DType::f16 && out != DType::bf16)
    fail("{}: tensor '{}': output dtype {} is not a float dtype", t.location, t.name, dtype_name(out));
  const size_t in_size = float_size(t.dtype), out_size = dtype_size(out);
  const size_t n = static_cast<size_t>(numel_of(t));
  const size_t rows = transpose ? static_cast<size_t>(t.shape[0]) : 1, cols = transpose ? static_cast<size_t>(t.shape[1]) : n;
  std::vector<uint8_t> result(n * out_size);
  for (size_t i = 0; i < n; ++i) {
    const float v = load(t.dtype, bytes + i * in_size);
    if (!std::isfinite(v)) non_finite(t, i, v);
    // Source element (r, c) of a [rows, cols] tensor lands at (c, r) of the [cols, rows] result.
    const size_t j = transpose ? (i % cols) * rows + i / cols : i;
    uint8_t* dst = result.data() + j * out_size;
    if (out == DType::f32) {
      std::memcpy(dst, &v, 4);
    } else if (out == DType::bf16) {
      const uint16_t h = f32_to_bf16(v);
      std::memcpy(dst, &h, 2);
    } else {
      const uint16_t h = f32_to_f16(v);
      if (std::isinf(f16_to_f32(h)))  // finite input that rounds past 65504
        fail("{}: tensor '{}' element {} = {} is beyond the f16 range (±65504); use --dtype bf16 or f32",
             t.location, t.name, i, v);
      std::memcpy(dst, &h, 2);
    }
  }
  return result;
}

void check_finite(const CheckpointTensor& t, const uint8_t* bytes) {
  check_size(t);
  const size_t size = float_size(t.dtype), n = static_cast<size_t>(numel_of(t));
  for (size_t i = 0; i < n; ++i) {
    const float v = load(t.dtype, bytes + i * size);
    if (!std::isfinite(v)) non_finite(t, i, v);
  }
}

}  // namespace bertrt::convert
