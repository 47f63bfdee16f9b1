// NumPy's .npy format (version 1.0): what `bertrt embed --output FILE.npy` writes, so that
// numpy.load(FILE) gives the embeddings as a float32 (or int8 / uint8) matrix.
#pragma once

#include <cstddef>
#include <string>

namespace bertrt::cli {

// Writes x [rows, cols] (C order, little-endian) of numpy dtype `descr` ("<f4", "|i1", "|u1")
// and `itemsize` bytes an element to `path` atomically: a failed write leaves an existing file
// untouched. Throws bertrt::Error naming the path.
void write_npy(const std::string& path, const char* descr, size_t itemsize, const void* x,
               size_t rows, size_t cols);
inline void write_npy_f32(const std::string& path, const float* x, size_t rows, size_t cols) {
  write_npy(path, "<f4", sizeof(float), x, rows, cols);
}

}  // namespace bertrt::cli
