// Where `bertrt embed` puts its embeddings, at the precision asked for (embed/
// embedding_precision.h): JSON lines on stdout, streamed as the embeddings come, or one .npy
// matrix (float32, int8 or uint8; packed bits for binary / ubinary) written at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "embed/embedding_precision.h"

namespace bertrt::cli {

class EmbeddingOutput {
 public:
  // npy_path empty: JSON lines. `ranges`: int8 / uint8 calibration ranges; without them the
  // ranges are those of all the embeddings added (upstream's default), so nothing is printed
  // before finish().
  EmbeddingOutput(std::string npy_path, EmbeddingPrecision precision, int dim,
                  std::optional<QuantizationRanges> ranges);
  // rows embeddings [rows, dim], in input order.
  void add(const float* e, size_t rows);
  // Prints or writes what is left; says on stderr what was written (and where the int8 / uint8
  // ranges came from).
  void finish();

 private:
  void emit(const float* e, size_t rows);  // quantizes as needed, prints or keeps for the .npy

  std::string npy_path_;
  EmbeddingPrecision precision_;
  int dim_;
  std::optional<QuantizationRanges> ranges_;
  std::vector<float> pending_;   // waiting for the ranges of everything
  std::vector<uint8_t> matrix_;  // the .npy's bytes
  size_t rows_ = 0;
  std::string line_;
};

// int8 / uint8 ranges over the embeddings of every line of the text file `path`; `embed` gives
// the embeddings [texts, dim] of a list of texts. Throws bertrt::Error naming the file when it
// has no line.
QuantizationRanges calibration_ranges_of_file(
    const std::string& path, int dim,
    const std::function<std::vector<float>(const std::vector<std::string>&)>& embed);

}  // namespace bertrt::cli
