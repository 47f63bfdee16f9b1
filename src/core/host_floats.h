// Host float storage for the model's parameters and gradients, either
//   - owned: 64-byte aligned; a large zero-filled array comes straight from the kernel (anonymous
//     mmap), so it costs neither a fill pass nor memory for the pages nobody writes (an int8
//     model's fp32 weight slots, which it never uses), or
//   - borrowed: memory another object keeps alive through `owner` (the copy-on-write mapping of a
//     model file, io/model_io.cpp), used in place: nothing is copied, and writes (training) go to
//     private copies of the pages they touch, never to the file.
#pragma once

#include <cstddef>
#include <memory>

namespace bertrt {

class HostFloats {
 public:
  HostFloats() = default;
  ~HostFloats() { reset(); }
  HostFloats(HostFloats&& o) noexcept { *this = std::move(o); }
  HostFloats& operator=(HostFloats&& o) noexcept;
  HostFloats(const HostFloats&) = delete;
  HostFloats& operator=(const HostFloats&) = delete;

  // n owned floats, every one = value. Throws std::bad_alloc.
  void assign(size_t n, float value);
  // n floats at p (64-byte aligned), valid while `owner` lives; not freed here.
  void borrow(float* p, size_t n, std::shared_ptr<const void> owner);
  void reset();

  float* data() { return p_; }
  const float* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  bool borrowed() const { return owner_ != nullptr; }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
  size_t mapped_bytes_ = 0;  // > 0: p_ is an anonymous mapping of that many bytes
  std::shared_ptr<const void> owner_;
};

// Maps in, writable, the whole pages inside [p, p + n floats) in one call (MADV_POPULATE_WRITE,
// Linux ≥ 5.14) instead of one page fault per page at the first write: a training step writes
// every trainable parameter (each page of a copy-on-write model mapping then becomes a private
// copy) and every moment, and on a 2-core VM those faults one by one, each a TLB flush on both
// cores, made BERT-base's first step ~17 s against 2.3 s for the next. The bytes do not change.
// Advice only: false, with nothing changed, where the kernel refuses it.
bool populate_for_write(float* p, size_t n);

}  // namespace bertrt
