// MappedFile::release_clean_pages: pages of a private file mapping that were only read are given
// back (no longer mapped, the bytes the same when read again); a written page (anonymous once
// written) or anonymous memory makes it refuse the whole range and change nothing. And the cpu
// backend's provider bertrt, which packs a weight once and gives its file pages back: the same
// floats from a weight in a file mapping as from an anonymous copy, only the former given back.
// And the host backends' fill(·, 0) and scale(·, c > 0), which leave all-zero pages unwritten so
// that a lazily zeroed buffer (a frozen tensor's gradient) never takes memory. And
// populate_for_write, which maps pages in writable at once without changing a byte.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/host_floats.h"
#include "core/mapped_file.h"
#include "op_test_util.h"
#include "test_util.h"

namespace bertrt {
namespace {

const size_t kPage = size_t(::sysconf(_SC_PAGESIZE));

// W written to a file in dir and mapped as a model file is (private, writable).
MappedFile mapped_copy(const test::TempDir& dir, const std::vector<float>& W) {
  const std::string path = dir.file("w.bin");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(W.data()), std::streamsize(W.size() * sizeof(float)));
  }
  return MappedFile::open(path, /*copy_on_write=*/true);
}

uint8_t pattern(size_t i) { return uint8_t(i * 131 + (i >> 12)); }

// n bytes of pattern() written to dir/name, the path.
std::string pattern_file(const test::TempDir& dir, const std::string& name, size_t n) {
  const std::string path = dir.file(name);
  std::ofstream f(path, std::ios::binary);
  for (size_t i = 0; i < n; ++i) f.put(char(pattern(i)));
  return path;
}

TEST(ReleaseCleanPages, ReadPagesGoBackWrittenOrAnonymousOnesStay) {
  // qemu-user: pagemap describes the emulator's host addresses, not the guest's.
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  test::TempDir dir;
  const size_t pages = 64, n = pages * kPage;
  const std::string path = pattern_file(dir, "release_pages.bin", n);
  MappedFile map = MappedFile::open(path, /*copy_on_write=*/true);
  ASSERT_NE(map.writable_data(), nullptr);
  const uint8_t* d = map.data();
  ASSERT_EQ(0u, reinterpret_cast<uintptr_t>(d) % kPage);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += d[i] != pattern(i);
  ASSERT_EQ(bad, 0u);
  if (test::mapped_pages(d, pages) < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
  ASSERT_EQ(test::mapped_pages(d, pages), int(pages));

  EXPECT_TRUE(MappedFile::release_clean_pages(d, n));
  EXPECT_EQ(test::mapped_pages(d, pages), 0);
  for (size_t i = 0; i < n; ++i) bad += d[i] != pattern(i);  // mapped again from the file
  EXPECT_EQ(bad, 0u);

  // A written page: the range around it is refused, the write survives; a range beside it goes.
  map.writable_data()[10 * kPage + 7] = uint8_t(pattern(10 * kPage + 7) + 1);
  EXPECT_FALSE(MappedFile::release_clean_pages(d, n));
  EXPECT_FALSE(MappedFile::release_clean_pages(d + 9 * kPage, 3 * kPage));
  EXPECT_EQ(d[10 * kPage + 7], uint8_t(pattern(10 * kPage + 7) + 1));
  EXPECT_TRUE(MappedFile::release_clean_pages(d + 20 * kPage, 10 * kPage));
  EXPECT_EQ(test::mapped_pages(d + 20 * kPage, 10), 0);
  EXPECT_EQ(d[10 * kPage + 7], uint8_t(pattern(10 * kPage + 7) + 1));
  for (size_t i = 20 * kPage; i < 30 * kPage; ++i) bad += d[i] != pattern(i);
  EXPECT_EQ(bad, 0u);

  // Anonymous memory (e.g. weights loaded by copy): refused, the values stay.
  std::vector<float> anon(pages * kPage / sizeof(float) + kPage, 1.5f);
  EXPECT_FALSE(MappedFile::release_clean_pages(anon.data(), anon.size() * sizeof(float)));
  for (float x : anon) bad += x != 1.5f;
  EXPECT_EQ(bad, 0u);
  // Less than a whole page: nothing to give back.
  EXPECT_FALSE(MappedFile::release_clean_pages(d + 40 * kPage + 1, kPage));
}

// populate_for_write (what a training step's first AdamW update does before it writes): the
// whole pages in the range of a copy-on-write model mapping become private copies (resident, no
// longer file pages) with the same bytes and the file unchanged; pages beside it stay file pages;
// fresh zero memory becomes resident and still reads zero.
TEST(PopulateForWrite, CopyOnWritePagesBecomePrivateWithTheSameBytesAndTheFileUnchanged) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  test::TempDir dir;
  const size_t pages = 48, n = pages * kPage;
  const std::string path = pattern_file(dir, "populate.bin", n);
  MappedFile map = MappedFile::open(path, /*copy_on_write=*/true);
  ASSERT_NE(map.writable_data(), nullptr);
  const uint8_t* d = map.data();
  if (test::mapped_pages(d, pages) < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
  ASSERT_TRUE(MappedFile::pages_clean(d, n));
  // From the middle of page 8 to the middle of page 24: whole pages 9 … 23.
  float* from = reinterpret_cast<float*>(map.writable_data() + 8 * kPage + kPage / 2);
  if (!populate_for_write(from, 16 * kPage / sizeof(float)))
    GTEST_SKIP() << "MADV_POPULATE_WRITE refused (Linux < 5.14)";
  EXPECT_FALSE(MappedFile::pages_clean(d + 9 * kPage, kPage));
  EXPECT_FALSE(MappedFile::pages_clean(d + 23 * kPage, kPage));
  EXPECT_EQ(test::mapped_pages(d + 9 * kPage, 15), 15);
  EXPECT_TRUE(MappedFile::pages_clean(d + 8 * kPage, kPage));  // partly in range: left alone
  EXPECT_TRUE(MappedFile::pages_clean(d + 24 * kPage, 24 * kPage));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += d[i] != pattern(i);
  EXPECT_EQ(bad, 0u);
  map.writable_data()[12 * kPage] = uint8_t(pattern(12 * kPage) + 1);  // the private copy
  const std::string file = test::read_bytes(path);
  ASSERT_EQ(file.size(), n);
  for (size_t i = 0; i < n; ++i) bad += uint8_t(file[i]) != pattern(i);
  EXPECT_EQ(bad, 0u);

  HostFloats zeros;
  const size_t zpages = (size_t(2) << 20) / kPage;
  zeros.assign(zpages * kPage / sizeof(float), 0.0f);  // ≥ 1 MB: a fresh anonymous mapping
  EXPECT_EQ(test::mapped_pages(zeros.data(), zpages), 0);
  ASSERT_TRUE(populate_for_write(zeros.data(), zeros.size()));
  EXPECT_EQ(test::mapped_pages(zeros.data(), zpages, /*exclusive=*/true), int(zpages));
  for (size_t i = 0; i < zeros.size(); ++i) bad += zeros.data()[i] != 0.0f;
  EXPECT_EQ(bad, 0u);
}

TEST(ReleaseCleanPages, ProviderBertrtGivesBackTheFilePagesOfWeightsItPacked) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  const int M = 64, N = 40, K = 1024;  // W: 160 KB, 40 pages
  test::TempDir dir;
  const auto W = test::randn(size_t(N) * K, 5, 0.1f);
  const MappedFile map = mapped_copy(dir, W);
  const auto* w_file = reinterpret_cast<const float*>(map.data());
  const auto X = test::randn(size_t(M) * K, 6);
  auto run = [&](const float* w, CpuBackend::FcStats* stats) {
    CpuBackend be(2);
    be.set_fc_provider(cpu::FcProvider::kBertrt);
    be.set_constant_weights(true);
    std::vector<float> Y(size_t(M) * N);
    for (int i = 0; i < 2; ++i)  // the second call reads the packed copy only
      be.gemm(false, true, M, N, K, 1.0f, X.data(), K, w, K, 0.0f, Y.data(), N);
    *stats = be.fc_stats();
    return Y;
  };
  CpuBackend::FcStats from_file, from_copy;
  const auto y_file = run(w_file, &from_file), y_copy = run(W.data(), &from_copy);
  EXPECT_EQ(y_file, y_copy);
  EXPECT_EQ(from_file.bertrt_calls, 2u);
  if (CpuBackend(1).f32_kernel() == cpu::F32Kernel::kScalar) {
    EXPECT_EQ(from_file.packed_bytes, 0u);  // the scalar kernel reads W in place
    return;
  }
  EXPECT_GE(from_file.packed_bytes, W.size() * sizeof(float));
  EXPECT_EQ(from_file.released_bytes, W.size() * sizeof(float));
  EXPECT_EQ(from_copy.released_bytes, 0u);  // anonymous memory: kept
  EXPECT_EQ(test::mapped_pages(w_file, W.size() * sizeof(float) / kPage), 0);
}

// Another fp32 kernel drops the packed copies (another tile layout); the counts then describe the
// copies packed since: a weight packed under two kernels in turn is counted once, not twice.
TEST(ReleaseCleanPages, AnotherKernelCountsOnlyTheCopiesItPacked) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  const int M = 64, N = 40, K = 1024;
  test::TempDir dir;
  const auto W = test::randn(size_t(N) * K, 9, 0.1f);
  const MappedFile map = mapped_copy(dir, W);
  const auto* w_file = reinterpret_cast<const float*>(map.data());
  const auto X = test::randn(size_t(M) * K, 10);
  std::vector<float> Y(size_t(M) * N);
  CpuBackend be(2);
  be.set_fc_provider(cpu::FcProvider::kBertrt);
  be.set_constant_weights(true);
  for (const cpu::F32Kernel k :
       {cpu::F32Kernel::kAvx512f, cpu::F32Kernel::kFma3, cpu::F32Kernel::kScalar}) {
    if (!cpu::f32_kernel_available(k)) continue;
    be.set_f32_kernel(k);
    be.gemm(false, true, M, N, K, 1.0f, X.data(), K, w_file, K, 0.0f, Y.data(), N);
    const bool packs = k != cpu::F32Kernel::kScalar;  // the scalar kernel reads W in place
    EXPECT_EQ(be.fc_stats().released_bytes, packs ? W.size() * sizeof(float) : 0u)
        << cpu::f32_kernel_name(k);
    EXPECT_EQ(be.fc_stats().packed_bytes == 0, !packs) << cpu::f32_kernel_name(k);
  }
}

// auto, for each SIMD kernel this CPU runs (avx512f, fma3): the packed kernel for a weight in a
// file mapping from one panel of rows on (32, 16), and for every call once packed; OpenBLAS
// below it for a weight not packed yet. The floats are the kernel's either way: the packed
// copy's as bertrt's provider computes them. The scalar kernel: never by auto.
class AutoPacks : public ::testing::TestWithParam<cpu::F32Kernel> {};

TEST_P(AutoPacks, FileWeightsFromAFullPanelOn) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  const cpu::F32Kernel k = GetParam();
  if (!cpu::f32_kernel_available(k)) GTEST_SKIP() << cpu::f32_kernel_name(k) << " cannot run here";
  const int N = 40, K = 1024;
  test::TempDir dir;
  const auto W = test::randn(size_t(N) * K, 7, 0.1f);
  const MappedFile map = mapped_copy(dir, W);
  const auto* w_file = reinterpret_cast<const float*>(map.data());
  CpuBackend be(2), bertrt(2);
  be.set_f32_kernel(k);
  bertrt.set_f32_kernel(k);
  be.set_fc_provider(cpu::FcProvider::kAuto);
  be.set_constant_weights(true);
  bertrt.set_fc_provider(cpu::FcProvider::kBertrt);
  bertrt.set_constant_weights(true);
  auto gemm = [&](CpuBackend& b, int M) {
    const auto X = test::randn(size_t(M) * K, 8 + M);
    std::vector<float> Y(size_t(M) * N);
    b.gemm(false, true, M, N, K, 1.0f, X.data(), K, w_file, K, 0.0f, Y.data(), N);
    return Y;
  };
  gemm(be, 8);  // not packed, under a panel: OpenBLAS, W in place
  EXPECT_EQ(be.fc_stats().openblas_calls, 1u);
  EXPECT_EQ(be.fc_stats().bertrt_calls, 0u);
  if (k == cpu::F32Kernel::kScalar) {
    gemm(be, 64);
    EXPECT_EQ(be.fc_stats().openblas_calls, 2u);
    EXPECT_EQ(be.fc_stats().bertrt_calls, 0u);
    EXPECT_EQ(be.fc_stats().released_bytes, 0u);
    return;
  }
  EXPECT_EQ(gemm(be, 64), gemm(bertrt, 64));  // packed and given back
  EXPECT_EQ(be.fc_stats().bertrt_calls, 1u);
  EXPECT_EQ(be.fc_stats().released_bytes, W.size() * sizeof(float));
  EXPECT_EQ(gemm(be, 8), gemm(bertrt, 8));  // packed: the kernel for any M now
  EXPECT_EQ(be.fc_stats().bertrt_calls, 2u);
  EXPECT_EQ(be.fc_stats().openblas_calls, 1u);
  EXPECT_EQ(test::mapped_pages(w_file, W.size() * sizeof(float) / kPage), 0);
}

// fill(0) and scale(c > 0) on fresh anonymous pages: the pages never written stay unowned (read,
// they map the shared zero page only), the
// written ones hold exactly what the plain loops give (+0 where filled, x·c where scaled), on
// blocks that start and end mid-page. Other values and factors write every element.
TEST(ZeroPages, FillAndScaleLeaveNeverWrittenPagesUnowned) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  const size_t pages = 32, n = pages * kPage / sizeof(float);
  void* m = ::mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* x = static_cast<float*>(m);
  if (test::mapped_pages(x, pages) < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
  // Most kernels map the shared zero page on a read fault; some VMs' give a private page (seen on
  // a 6.18 guest), and there reading a page owns it: only the values can be checked.
  const bool shared_zero_page = [] {
    void* probe = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const volatile float read = *static_cast<const volatile float*>(probe);
    (void)read;
    const bool shared = test::mapped_pages(probe, 1, /*exclusive=*/true) == 0;
    ::munmap(probe, kPage);
    return shared;
  }();
  const int untouched_owned = shared_zero_page ? 0 : int(pages) - 3;
  const size_t per_page = kPage / sizeof(float);
  // Written: pages 3, 4 (−0 on page 4: not all-zero bits) and 20.
  x[3 * per_page + 7] = 1.5f, x[4 * per_page] = -0.0f, x[20 * per_page + per_page - 1] = -2.0f;
  std::vector<float> want(x, x + n);
  ReferenceBackend be;
  for (size_t i = 5; i < n - 9; ++i) want[i] *= 0.25f;
  be.scale(x + 5, 0.25f, n - 14);
  EXPECT_EQ(test::mapped_pages(x, pages, /*exclusive=*/true), 3 + untouched_owned);
  EXPECT_EQ(std::memcmp(x, want.data(), n * sizeof(float)), 0);
  for (size_t i = 3; i < n - 1; ++i) want[i] = 0.0f;
  be.fill(x + 3, 0.0f, n - 4);
  EXPECT_EQ(test::mapped_pages(x, pages, /*exclusive=*/true), 3 + untouched_owned);
  EXPECT_EQ(std::memcmp(x, want.data(), n * sizeof(float)), 0);
  be.scale(x, -1.0f, n);  // a negative factor: −0 where +0 was, every page written
  EXPECT_EQ(test::mapped_pages(x, pages, /*exclusive=*/true), int(pages));
  EXPECT_TRUE(std::signbit(x[100]));
  ::munmap(m, pages * kPage);
}

INSTANTIATE_TEST_SUITE_P(ReleaseCleanPages, AutoPacks, ::testing::ValuesIn(cpu::kAllF32Kernels),
                         [](const ::testing::TestParamInfo<cpu::F32Kernel>& info) {
                           return std::string(cpu::f32_kernel_name(info.param));
                         });

}  // namespace
}  // namespace bertrt
