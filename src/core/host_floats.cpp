#include "core/host_floats.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace bertrt {

namespace {
// Below this a malloc'd block is as cheap; above it the kernel's zero pages save the fill.
constexpr size_t kMapThreshold = size_t(1) << 20;
}  // namespace

HostFloats& HostFloats::operator=(HostFloats&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(p_, o.p_), std::swap(n_, o.n_), std::swap(mapped_bytes_, o.mapped_bytes_);
    std::swap(owner_, o.owner_);
  }
  return *this;
}

void HostFloats::reset() {
  if (p_ && !owner_) {
    if (mapped_bytes_)
      ::munmap(p_, mapped_bytes_);
    else
      std::free(p_);
  }
  p_ = nullptr, n_ = 0, mapped_bytes_ = 0, owner_.reset();
}

void HostFloats::assign(size_t n, float value) {
  reset();
  if (n == 0) return;
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  if (value == 0.0f && bytes >= kMapThreshold) {
    // Fresh anonymous pages read as zero (POSIX mmap), page-aligned, so 64-byte aligned.
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<float*>(p), n_ = n, mapped_bytes_ = bytes;
    return;
  }
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  p_ = static_cast<float*>(p), n_ = n;
  std::fill_n(p_, n, value);
}

bool populate_for_write(float* p, size_t n) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // <linux/mman.h>; glibc headers older than Linux 5.14
#endif
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (a + page - 1) / page * page, last = (a + n * sizeof(float)) / page * page;
  if (last <= first) return false;
  return ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE) == 0;
}

void HostFloats::borrow(float* p, size_t n, std::shared_ptr<const void> owner) {
  reset();
  p_ = p, n_ = n;
  // A non-null owner marks the memory as borrowed even if the caller keeps it alive otherwise.
  owner_ = owner ? std::move(owner) : std::shared_ptr<const void>(p, [](const void*) {});
}

}  // namespace bertrt
