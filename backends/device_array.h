// Backend memory for the layers above backends/: typed, owned arrays (the arena blocks of the
// model, its heads, the optimizer and the quantization state) and host-first buffers
// (parameters, gradients) that move to a backend on first use, like torch's .to().
//
// On a backend that accepts host pointers (cpu, reference) both are plain 64-byte aligned host
// memory: no copy, no extra bytes, and no lifetime tie to the backend. On any other backend the
// memory comes from Backend::alloc(); it goes with the backend, and an array that outlives its
// backend only forgets it (HostDeviceBuffer::host() then fails: its data is lost).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/host_floats.h"

namespace bertrt {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Backend& be, size_t n) { ensure(be, n); }
  ~DeviceArray() { reset(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { *this = std::move(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(be_, o.be_), std::swap(p_, o.p_), std::swap(n_, o.n_), std::swap(cap_, o.cap_);
      std::swap(host_, o.host_), std::swap(life_, o.life_);
    }
    return *this;
  }

  // At least n elements of `be`'s memory. Grow-only: batches change size every step, and a block
  // that is large enough is kept, contents and all. A new block's contents are undefined.
  T* ensure(Backend& be, size_t n) {
    const bool host = be.accepts_host_pointers();
    const bool same_home = host ? host_ : (be_ == &be && !life_.expired());
    if (!same_home || n > cap_) {
      reset();
      const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
      if (host) {
        void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) throw std::bad_alloc();
        p_ = static_cast<T*>(p);
      } else {
        p_ = static_cast<T*>(be.alloc(bytes));
      }
      be_ = &be, host_ = host, cap_ = std::max<size_t>(n, 1), life_ = be.lifetime();
    }
    be_ = &be;
    n_ = n;
    return p_;
  }
  void reset() {
    if (p_ && host_) std::free(p_);
    if (p_ && !host_ && alive()) be_->release(p_);
    be_ = nullptr, p_ = nullptr, n_ = cap_ = 0, host_ = false, life_.reset();
  }
  // False once a backend (not host) array's backend is destroyed.
  bool alive() const { return host_ || !life_.expired(); }

  T* data() const { return p_; }
  size_t size() const { return n_; }
  // Elements the block holds (ensure() up to this many keeps it).
  size_t capacity() const { return cap_; }
  bool empty() const { return n_ == 0; }
  Backend* backend() const { return be_; }

 private:
  Backend* be_ = nullptr;
  T* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
  bool host_ = false;  // plain host memory (a backend that accepts host pointers)
  std::weak_ptr<const void> life_;
};

// A float buffer the host creates and reads (initialisation, loading, saving, tests) and ops use
// on a backend. Where the backend accepts host pointers the host buffer is what ops get; else
// on(be) moves the data into backend memory and host() brings it back (sync + download), after
// which the host copy is the current one until the next on(be). The host copy is owned (zeros cost
// no memory until written) or borrowed in place (core/host_floats.h: a mapped model file).
class HostDeviceBuffer {
 public:
  void assign(size_t n, float value) {
    host_.assign(n, value);
    dev_.reset();
    on_device_ = false;
  }
  // n floats at p used in place while `owner` keeps them alive (HostFloats::borrow).
  void borrow(float* p, size_t n, std::shared_ptr<const void> owner) {
    host_.borrow(p, n, std::move(owner));
    dev_.reset();
    on_device_ = false;
  }
  bool borrowed() const { return host_.borrowed(); }
  void clear() { assign(0, 0.0f); }
  size_t size() const { return host_.size(); }
  bool empty() const { return host_.empty(); }

  float* host() {
    if (on_device_) {
      if (!dev_.alive())
        fail(
            "the data lived in the memory of a backend that has been destroyed (keep the "
            "backend until the model is saved or moved back with params())");
      Backend& be = *dev_.backend();
      be.download(host_.data(), dev_.data(), host_.size() * sizeof(float));
      be.sync();
      on_device_ = false;
    }
    return host_.data();
  }
  const float* host() const { return const_cast<HostDeviceBuffer*>(this)->host(); }

  float* on(Backend& be) {
    if (be.accepts_host_pointers()) return host();
    if (!on_device_ || dev_.backend() != &be) {
      const float* src = host();  // from another device: through the host
      dev_.ensure(be, host_.size());
      be.upload(dev_.data(), src, host_.size() * sizeof(float));
      on_device_ = true;
    }
    return dev_.data();
  }

 private:
  HostFloats host_;
  DeviceArray<float> dev_;
  bool on_device_ = false;
};

// Read-only host data (int8 weights, a memory-mapped tensor) that ops read: the host pointer
// itself where the backend accepts host pointers, else a copy uploaded once into its memory.
template <typename T>
class ConstMirror {
 public:
  const T* on(Backend& be, const T* host, size_t n) {
    if (be.accepts_host_pointers() || n == 0) return host;
    if (host != src_ || n != dev_.size() || dev_.backend() != &be) {
      dev_.ensure(be, n);
      be.upload(dev_.data(), host, n * sizeof(T));
      src_ = host;
    }
    return dev_.data();
  }
  void reset() { dev_.reset(), src_ = nullptr; }

 private:
  DeviceArray<T> dev_;
  const T* src_ = nullptr;
};

// The host copy of n elements of backend memory (one download and a sync).
template <typename T>
std::vector<T> read_back(Backend& be, const T* src, size_t n) {
  std::vector<T> out(n);
  if (n) be.download(out.data(), src, n * sizeof(T));
  be.sync();
  return out;
}

}  // namespace bertrt
