// NumPy's .npy format (version 1.0): what `bertrt embed --output FILE.npy` writes, so that
// numpy.load(FILE) gives the embeddings as a float32 matrix.
#pragma once

#include <cstddef>
#include <string>

namespace bertrt::cli {

// Writes x [rows, cols] (C order, little-endian float32) to `path` atomically: a failed write
// leaves an existing file untouched. Throws bertrt::Error naming the path.
void write_npy_f32(const std::string& path, const float* x, size_t rows, size_t cols);

}  // namespace bertrt::cli
