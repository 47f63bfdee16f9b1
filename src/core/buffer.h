// 64-byte aligned storage for activations, parameters and gradients (cache lines, AVX-512 loads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace bertrt {

template <typename T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr size_t kAlignment = 64;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, bytes == 0 ? kAlignment : bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const AlignedAllocator<U>&) const { return false; }
};

using FloatBuffer = std::vector<float, AlignedAllocator<float>>;

// Carves consecutive 64-byte aligned float arrays out of one FloatBuffer: call take() for every
// array with the sizes first (counting pass, base == nullptr), allocate, then take() again.
class Carver {
 public:
  explicit Carver(float* base) : base_(base) {}
  float* take(size_t n) {
    float* p = base_ ? base_ + used_ : nullptr;
    used_ += (n + 15) / 16 * 16;
    return p;
  }
  size_t used() const { return used_; }

 private:
  float* base_;
  size_t used_ = 0;
};

}  // namespace bertrt
