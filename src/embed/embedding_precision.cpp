#include "embed/embedding_precision.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace bertrt {

namespace {

constexpr EmbeddingPrecision kAll[] = {EmbeddingPrecision::kFloat32, EmbeddingPrecision::kInt8,
                                       EmbeddingPrecision::kUint8, EmbeddingPrecision::kBinary,
                                       EmbeddingPrecision::kUbinary};

// numpy's astype to an integer type truncates toward zero; out of range it is a C cast (undefined,
// wraps on x86): saturate instead. NaN (an empty range) gives the lowest code.
inline int to_code(float v, int lo, int hi) {
  if (!(v > float(lo))) return lo;
  if (v >= float(hi)) return hi;
  return int(std::trunc(v));
}

}  // namespace

const char* embedding_precision_name(EmbeddingPrecision p) {
  switch (p) {
    case EmbeddingPrecision::kFloat32:
      return "float32";
    case EmbeddingPrecision::kInt8:
      return "int8";
    case EmbeddingPrecision::kUint8:
      return "uint8";
    case EmbeddingPrecision::kBinary:
      return "binary";
    case EmbeddingPrecision::kUbinary:
      return "ubinary";
  }
  return "?";
}

EmbeddingPrecision parse_embedding_precision(const std::string& name, const std::string& where) {
  for (EmbeddingPrecision p : kAll)
    if (name == embedding_precision_name(p)) return p;
  fail("{}: '{}' is not one of float32, int8, uint8, binary, ubinary", where, name);
}

size_t quantized_width(EmbeddingPrecision p, int dim) {
  if (p == EmbeddingPrecision::kBinary || p == EmbeddingPrecision::kUbinary)
    return (size_t(dim) + 7) / 8;
  return size_t(dim);
}

const char* quantized_npy_descr(EmbeddingPrecision p) {
  switch (p) {
    case EmbeddingPrecision::kFloat32:
      return "<f4";
    case EmbeddingPrecision::kInt8:
    case EmbeddingPrecision::kBinary:
      return "|i1";
    case EmbeddingPrecision::kUint8:
    case EmbeddingPrecision::kUbinary:
      return "|u1";
  }
  return "?";
}

void extend_ranges(QuantizationRanges& r, const float* x, size_t rows, int dim) {
  if (r.min.empty() && rows > 0) {
    r.min.assign(x, x + dim);
    r.max.assign(x, x + dim);
  }
  if (r.dim() != dim)
    fail("calibration ranges have {} dimensions, the embeddings {}", r.dim(), dim);
  for (size_t i = 0; i < rows; ++i)
    for (int d = 0; d < dim; ++d) {
      const float v = x[i * size_t(dim) + d];
      if (!std::isfinite(v)) fail("calibration embedding {} has a non-finite value at {}", i, d);
      r.min[d] = std::min(r.min[d], v);
      r.max[d] = std::max(r.max[d], v);
    }
}

QuantizationRanges calibration_ranges(const float* x, size_t rows, int dim) {
  if (rows == 0) fail("int8/uint8 quantization needs at least one calibration embedding");
  QuantizationRanges r;
  extend_ranges(r, x, rows, dim);
  return r;
}

std::vector<uint8_t> quantize_embeddings(const float* x, size_t rows, int dim, EmbeddingPrecision p,
                                         const QuantizationRanges* ranges) {
  if (dim < 1) fail("quantize_embeddings: dimension {} is not positive", dim);
  const size_t width = quantized_width(p, dim);
  std::vector<uint8_t> out(rows * width);
  switch (p) {
    case EmbeddingPrecision::kFloat32:
      fail("quantize_embeddings: float32 is not a quantized precision");
    case EmbeddingPrecision::kInt8:
    case EmbeddingPrecision::kUint8: {
      if (!ranges || ranges->dim() != dim || ranges->max.size() != ranges->min.size())
        fail("{} quantization needs ranges of {} dimensions, got {}", embedding_precision_name(p),
             dim, ranges ? ranges->dim() : 0);
      // float32 throughout, each step one IEEE operation as numpy runs it: no contraction, so the
      // codes are upstream's bit for bit.
      const std::vector<float>& start = ranges->min;
      std::vector<float> step(static_cast<size_t>(dim));
      for (int d = 0; d < dim; ++d) step[d] = (ranges->max[d] - ranges->min[d]) / 255.0f;
      const bool is_int8 = p == EmbeddingPrecision::kInt8;
      for (size_t i = 0; i < rows; ++i)
        for (int d = 0; d < dim; ++d) {
          const size_t k = i * size_t(dim) + d;
          const float q = (x[k] - start[d]) / step[d];
          out[k] = is_int8 ? uint8_t(int8_t(to_code(q - 128.0f, -128, 127)))
                           : uint8_t(to_code(q, 0, 255));
        }
      break;
    }
    case EmbeddingPrecision::kBinary:
    case EmbeddingPrecision::kUbinary: {
      const uint8_t offset = p == EmbeddingPrecision::kBinary ? 0x80 : 0;  // byte − 128 as int8
      for (size_t i = 0; i < rows; ++i) {
        const float* row = x + i * size_t(dim);
        uint8_t* o = out.data() + i * width;
        for (size_t b = 0; b < width; ++b) {
          uint8_t byte = 0;
          for (int k = 0; k < 8; ++k) {
            const size_t d = b * 8 + size_t(k);
            if (d < size_t(dim) && row[d] > 0.0f) byte |= uint8_t(0x80u >> k);
          }
          o[b] = byte ^ offset;
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace bertrt
