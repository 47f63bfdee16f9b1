#include "embedding_output.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "common.h"
#include "core/error.h"
#include "core/float_decimal.h"
#include "npy_file.h"

namespace bertrt::cli {

namespace {

// Upstream warns below this many embeddings when the ranges come from the embeddings themselves.
constexpr size_t kFewForRanges = 100;
constexpr size_t kChunk = 1024;

}  // namespace

EmbeddingOutput::EmbeddingOutput(std::string npy_path, EmbeddingPrecision precision, int dim,
                                 std::optional<QuantizationRanges> ranges)
    : npy_path_(std::move(npy_path)),
      precision_(precision),
      dim_(dim),
      ranges_(std::move(ranges)) {}

void EmbeddingOutput::add(const float* e, size_t rows) {
  if (precision_needs_ranges(precision_) && !ranges_) {
    pending_.insert(pending_.end(), e, e + rows * size_t(dim_));
    return;
  }
  emit(e, rows);
}

void EmbeddingOutput::emit(const float* e, size_t rows) {
  rows_ += rows;
  if (precision_ == EmbeddingPrecision::kFloat32) {
    if (!npy_path_.empty()) {
      const auto* b = reinterpret_cast<const uint8_t*>(e);
      matrix_.insert(matrix_.end(), b, b + rows * size_t(dim_) * sizeof(float));
      return;
    }
    for (size_t i = 0; i < rows; ++i) {
      line_ = "{\"embedding\":[";
      for (int d = 0; d < dim_; ++d) {
        if (d) line_ += ',';
        line_ += float_decimal(e[i * size_t(dim_) + d]);
      }
      line_ += "]}\n";
      std::fwrite(line_.data(), 1, line_.size(), stdout);
    }
    std::fflush(stdout);
    return;
  }
  const std::vector<uint8_t> q =
      quantize_embeddings(e, rows, dim_, precision_, ranges_ ? &*ranges_ : nullptr);
  if (!npy_path_.empty()) {
    matrix_.insert(matrix_.end(), q.begin(), q.end());
    return;
  }
  const size_t width = quantized_width(precision_, dim_);
  const bool is_signed = quantized_signed(precision_);
  for (size_t i = 0; i < rows; ++i) {
    line_ = "{\"embedding\":[";
    for (size_t k = 0; k < width; ++k) {
      if (k) line_ += ',';
      const uint8_t b = q[i * width + k];
      line_ += std::to_string(is_signed ? int(int8_t(b)) : int(b));
    }
    line_ += "]}\n";
    std::fwrite(line_.data(), 1, line_.size(), stdout);
  }
  std::fflush(stdout);
}

void EmbeddingOutput::finish() {
  const char* name = embedding_precision_name(precision_);
  if (precision_needs_ranges(precision_) && !ranges_) {
    const size_t rows = pending_.size() / size_t(dim_);
    if (rows > 0) {
      ranges_ = calibration_ranges(pending_.data(), rows, dim_);
      if (rows < kFewForRanges)
        fmt::print(stderr,
                   "embed: {} ranges from the {} input embedding{} themselves; ranges from more "
                   "embeddings (--calibration FILE) are more stable\n",
                   name, rows, rows == 1 ? "" : "s");
      emit(pending_.data(), rows);
    }
    pending_.clear();
  }
  if (npy_path_.empty()) return;
  const size_t width = quantized_width(precision_, dim_);
  const size_t itemsize = precision_ == EmbeddingPrecision::kFloat32 ? sizeof(float) : 1;
  write_npy(npy_path_, quantized_npy_descr(precision_), itemsize, matrix_.data(), rows_, width);
  const bool packed =
      precision_ == EmbeddingPrecision::kBinary || precision_ == EmbeddingPrecision::kUbinary;
  fmt::print(stderr, "wrote {}: {} embeddings of {} dimensions ({}{})\n", npy_path_, rows_, dim_,
             name, packed ? fmt::format(", {} bytes a row", width) : "");
}

QuantizationRanges calibration_ranges_of_file(
    const std::string& path, int dim,
    const std::function<std::vector<float>(const std::vector<std::string>&)>& embed) {
  std::ifstream in(path);
  if (!in) fail("--calibration {}: cannot open", path);
  QuantizationRanges r;
  std::vector<std::string> chunk;
  size_t lines = 0;
  auto flush = [&] {
    if (chunk.empty()) return;
    const std::vector<float> e = embed(chunk);
    extend_ranges(r, e.data(), chunk.size(), dim);
    lines += chunk.size();
    chunk.clear();
  };
  for_each_line(in, path, [&](const std::string& text, size_t) {
    chunk.push_back(text);
    if (chunk.size() == kChunk) flush();
  });
  flush();
  if (lines == 0) fail("--calibration {}: no lines (one text a line)", path);
  return r;
}

}  // namespace bertrt::cli
