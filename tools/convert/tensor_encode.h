// Checkpoint tensor bytes → the dtype bertrt stores (--dtype f32|f16|bf16), with the transpose
// TF kernels need ([in, out] in TF, [out, in] in nn.Linear and in bertrt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convert/checkpoint.h"
#include "io/model_file.h"

namespace bertrt::convert {

// "f32" → DType::f32 etc.; nullopt for anything else.
std::optional<DType> parse_float_dtype(const std::string& name);
// The safetensors name of a bertrt dtype ("F32", "F16", "BF16", "I8", "I32").
const char* safetensors_dtype_name(DType dtype);
// True when a `src_dtype` tensor's bytes are already `out`'s bytes (no conversion needed).
bool same_encoding(const std::string& src_dtype, DType out);

// `bytes` (t.nbytes of them, t.dtype one of F32/F16/BF16/F64) as `out`, C order; transpose swaps
// the two axes of a 2-D tensor. Float rounding is to nearest, ties to even (as torch's .half() and
// .bfloat16()). Throws bertrt::Error naming t.location and t.name for a non-float dtype, a
// non-finite value (a broken checkpoint), or a value beyond the f16 range (±65504) when out is f16.
std::vector<uint8_t> encode_tensor(const CheckpointTensor& t, const uint8_t* bytes, DType out, bool transpose);

// Throws (as encode_tensor) when `bytes` hold a NaN or infinity; for tensors passed through as
// they are.
void check_finite(const CheckpointTensor& t, const uint8_t* bytes);

}  // namespace bertrt::convert
