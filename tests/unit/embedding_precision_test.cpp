// Quantized embeddings against sentence-transformers' quantize_embeddings itself: the codes the
// library computed (expected/st_quantize.json, written by tests/reference/st_quantize.py) from
// float32 inputs stored exactly in the file. Both sides run the same float32 operations
// ((x − start) / step, − 128, truncation; x > 0 and bit packing), so the codes must be equal.
#include "embed/embedding_precision.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "test_util.h"

namespace bertrt {
namespace {

nlohmann::json expected() {
  std::ifstream f(test::source_dir() + "/tests/reference/expected/st_quantize.json");
  return nlohmann::json::parse(f);
}

std::vector<float> matrix(const nlohmann::json& rows, int* dim) {
  std::vector<float> out;
  for (const auto& r : rows) {
    *dim = int(r.size());
    for (const auto& v : r) out.push_back(float(v.get<double>()));  // exact: each is a float32
  }
  return out;
}

TEST(EmbeddingPrecision, EqualsSentenceTransformersQuantizeEmbeddings) {
  const nlohmann::json j = expected();
  int checked = 0;
  for (const auto& c : j["cases"]) {
    int dim = 0, cal_dim = 0;
    const std::vector<float> x = matrix(c["embeddings"], &dim);
    const size_t rows = c["embeddings"].size();
    QuantizationRanges ranges;
    if (c.contains("calibration")) {
      const std::vector<float> cal = matrix(c["calibration"], &cal_dim);
      ranges = calibration_ranges(cal.data(), c["calibration"].size(), cal_dim);
    } else {
      ranges = calibration_ranges(x.data(), rows, dim);
    }
    for (const auto& [name, want] : c["outputs"].items()) {
      SCOPED_TRACE(c["name"].get<std::string>() + " " + name);
      const EmbeddingPrecision p = parse_embedding_precision(name, "test");
      const std::vector<uint8_t> got = quantize_embeddings(x.data(), rows, dim, p, &ranges);
      const size_t width = quantized_width(p, dim);
      ASSERT_EQ(want.size(), rows);
      for (size_t i = 0; i < rows; ++i) {
        ASSERT_EQ(want[i].size(), width);
        for (size_t k = 0; k < width; ++k) {
          const int code =
              quantized_signed(p) ? int(int8_t(got[i * width + k])) : int(got[i * width + k]);
          ASSERT_EQ(code, want[i][k].get<int>()) << "row " << i << " value " << k;
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8);
}

TEST(EmbeddingPrecision, OutsideTheCalibrationRangeSaturates) {
  // Ranges [0, 1] in both dimensions; numpy's astype would wrap these around (a C cast out of
  // range), bertrt clamps to the ends of the integer range.
  const float cal[] = {0.f, 0.f, 1.f, 1.f};
  const QuantizationRanges r = calibration_ranges(cal, 2, 2);
  const float x[] = {-0.5f, 3.f};
  const auto u = quantize_embeddings(x, 1, 2, EmbeddingPrecision::kUint8, &r);
  EXPECT_EQ(u[0], 0);
  EXPECT_EQ(u[1], 255);
  const auto s = quantize_embeddings(x, 1, 2, EmbeddingPrecision::kInt8, &r);
  EXPECT_EQ(int8_t(s[0]), -128);
  EXPECT_EQ(int8_t(s[1]), 127);
}

TEST(EmbeddingPrecision, EmptyRangeGivesTheLowestCode) {
  const float cal[] = {0.25f, 0.25f};
  const QuantizationRanges r = calibration_ranges(cal, 2, 1);
  const float x[] = {0.25f};
  EXPECT_EQ(quantize_embeddings(x, 1, 1, EmbeddingPrecision::kUint8, &r)[0], 0);
  EXPECT_EQ(int8_t(quantize_embeddings(x, 1, 1, EmbeddingPrecision::kInt8, &r)[0]), -128);
}

TEST(EmbeddingPrecision, RowsArePackedApart) {
  // 10 dimensions: two bytes a row, the second with 2 bits used (np.packbits(x > 0, axis=-1)).
  std::vector<float> x(20, -1.f);
  x[0] = 1.f;   // row 0, byte 0, highest bit
  x[9] = 1.f;   // row 0, byte 1, second-highest bit
  x[10] = 1.f;  // row 1, byte 0, highest bit
  const auto u = quantize_embeddings(x.data(), 2, 10, EmbeddingPrecision::kUbinary, nullptr);
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0], 0x80);
  EXPECT_EQ(u[1], 0x40);
  EXPECT_EQ(u[2], 0x80);
  EXPECT_EQ(u[3], 0x00);
  const auto b = quantize_embeddings(x.data(), 2, 10, EmbeddingPrecision::kBinary, nullptr);
  EXPECT_EQ(int8_t(b[0]), 0x80 - 128);
  EXPECT_EQ(int8_t(b[3]), -128);
}

TEST(EmbeddingPrecision, BadArgumentsAreErrors) {
  EXPECT_THROW(parse_embedding_precision("fp16", "--precision"), Error);
  const float x[] = {1.f, 2.f};
  EXPECT_THROW(quantize_embeddings(x, 1, 2, EmbeddingPrecision::kInt8, nullptr), Error);
  EXPECT_THROW(calibration_ranges(x, 0, 2), Error);
  const float nan[] = {0.f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(calibration_ranges(nan, 1, 2), Error);
  try {
    parse_embedding_precision("fp16", "--precision");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--precision: 'fp16' is not one of float32, int8, uint8, binary, ubinary");
  }
}

}  // namespace
}  // namespace bertrt
