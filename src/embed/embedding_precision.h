// Quantized sentence embeddings as sentence-transformers' quantize_embeddings (quantization.py)
// defines them, behind `bertrt embed --precision`, bertrt_quantize_embeddings and
// Model.embed(precision=):
//   int8 / uint8: per dimension d, start = min_d, step = (max_d − min_d) / 255 over calibration
//     embeddings (by default the embeddings themselves); uint8 = trunc((x − start) / step),
//     int8 = trunc((x − start) / step − 128), all in float32 as numpy computes them.
//   ubinary: the bits x > 0 packed 8 to a byte, the first dimension in the highest bit
//     (np.packbits); binary: the same byte − 128, as int8.
// Two choices where upstream's result is not defined by numpy (a C cast out of range): a value
// outside the calibration range saturates at the end of the integer range (numpy's astype wraps
// it around on x86), and a dimension whose range is empty (min = max) gives the lowest code.
// Rows are packed one by one (np.packbits(x > 0, axis=-1)): when the width is not a multiple of 8
// the last byte of each row ends in zero bits (upstream packs the flattened matrix, which keeps
// rows apart only when the width is a multiple of 8 or there is one row).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bertrt {

enum class EmbeddingPrecision { kFloat32, kInt8, kUint8, kBinary, kUbinary };

// "float32", "int8", "uint8", "binary", "ubinary" (sentence-transformers' names).
const char* embedding_precision_name(EmbeddingPrecision p);
// The precision of that name; throws bertrt::Error "<where>: '<name>' is not one of ..." else.
EmbeddingPrecision parse_embedding_precision(const std::string& name, const std::string& where);
// int8, uint8: the ranges matter (calibration).
inline bool precision_needs_ranges(EmbeddingPrecision p) {
  return p == EmbeddingPrecision::kInt8 || p == EmbeddingPrecision::kUint8;
}
// Values a row of `dim` dimensions quantizes to: dim (float32, int8, uint8) or ceil(dim / 8)
// bytes (binary, ubinary).
size_t quantized_width(EmbeddingPrecision p, int dim);
// numpy's dtype string of the quantized values: "<f4", "|i1" (int8, binary), "|u1" (uint8,
// ubinary).
const char* quantized_npy_descr(EmbeddingPrecision p);
// int8 and binary values are signed.
inline bool quantized_signed(EmbeddingPrecision p) {
  return p == EmbeddingPrecision::kInt8 || p == EmbeddingPrecision::kBinary;
}

// quantize_embeddings' `ranges`: the lowest and highest value of each dimension.
struct QuantizationRanges {
  std::vector<float> min, max;  // [dim] each
  int dim() const { return int(min.size()); }
};

// The ranges of rows [rows, dim] (np.min / np.max over axis 0). Throws bertrt::Error when rows is
// 0 or a value is not finite.
QuantizationRanges calibration_ranges(const float* x, size_t rows, int dim);
// Widens `r` to cover rows [rows, dim] too (ranges of a matrix seen in chunks); `r` empty: starts.
void extend_ranges(QuantizationRanges& r, const float* x, size_t rows, int dim);

// x [rows, dim] float32 → [rows, quantized_width] bytes (int8 values as their two's-complement
// bytes). `ranges` is used for int8 / uint8 and must have `dim` dimensions (throws
// bertrt::Error otherwise); float32 is refused (nothing to quantize: the caller keeps the floats).
std::vector<uint8_t> quantize_embeddings(const float* x, size_t rows, int dim, EmbeddingPrecision p,
                                         const QuantizationRanges* ranges);

}  // namespace bertrt
