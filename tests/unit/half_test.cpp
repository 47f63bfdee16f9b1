// fp16/bf16 conversions against numpy (float16, round-to-nearest-even) and torch (bfloat16).
#include "core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <unistd.h>

#include "test_util.h"

namespace bertrt {
namespace {

// Every fp16 pattern widens exactly (fp32 holds every fp16 value), and narrowing gives it back.
TEST(Half, F16WidenNarrowRoundTripsAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(Half, Bf16WidenNarrowRoundTripsAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h) << std::hex << h;
  }
}

// Hand-checkable values: 1 = 0x3c00, 65504 = max fp16, 2^-24 = smallest subnormal, 65520 rounds to
// inf (halfway between 65504 and 2^16, ties to even -> inf), 1 + 2^-11 ties down to 1 (even).
TEST(Half, KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -25)), 0x0000);  // tie with 0 -> even (0)
  EXPECT_EQ(f32_to_f16(1.f + std::ldexp(1.f, -11)), 0x3c00);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0xc0a0), -5.0f);
}

// Random fp32 bit patterns (all exponents) narrowed here vs numpy .astype(float16) and torch
// .bfloat16(): both round to nearest even, so the results must match bit for bit.
TEST(Half, NarrowingMatchesNumpyAndTorch) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  std::mt19937 rng(7);
  std::vector<uint32_t> bits(20000);
  for (auto& b : bits) b = static_cast<uint32_t>(rng());
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string in = dir + "/bertrt_half_in." + std::to_string(::getpid());
  const std::string out = in + ".out";
  std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(bits.data()), bits.size() * 4);
  const std::string cmd = "/usr/bin/python3 -W ignore -c \"import numpy as np, torch, sys; "
                          "x = np.fromfile(sys.argv[1], dtype='<u4').view(np.float32); "
                          "h = x.astype(np.float16).view(np.uint16); "
                          "b = torch.from_numpy(x.copy()).bfloat16().view(torch.int16).numpy().view(np.uint16); "
                          "np.concatenate([h, b]).tofile(sys.argv[2])\" " + in + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::vector<uint16_t> ref(2 * bits.size());
  std::ifstream(out, std::ios::binary).read(reinterpret_cast<char*>(ref.data()), ref.size() * 2);
  std::remove(in.c_str());
  std::remove(out.c_str());
  int checked = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const float f = f32_from_bits(bits[i]);
    if (std::isnan(f)) continue;  // NaN payloads differ between libraries; only NaN-ness matters
    ASSERT_EQ(f32_to_f16(f), ref[i]) << std::hex << bits[i];
    ASSERT_EQ(f32_to_bf16(f), ref[bits.size() + i]) << std::hex << bits[i];
    ++checked;
  }
  EXPECT_GT(checked, 19000);
}

}  // namespace
}  // namespace bertrt
