#include "convert/converted_model.h"

#include <fmt/ranges.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "convert/safetensors_source.h"
#include "convert/tensor_encode.h"
#include "core/error.h"
#include "core/version.h"

namespace bertrt::convert {

std::string converter_version() { return std::string("bertrt-convert ") + version_string(); }
namespace {

// Drops the whole pages of a converted source tensor from this process's memory: the mapping is
// read-only and file-backed, so the kernel re-reads them if ever touched again. Keeps the peak at
// about one copy of the weights when --dtype converts (mapped input + converted output otherwise).
void release_pages(const uint8_t* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

void emit_tensors(ConvertedModel& m, const std::vector<PlannedTensor>& plan, const ConvertOptions& opts) {
  const CheckpointReader& r = *m.reader;
  uint64_t total = 0, done = 0;
  for (const PlannedTensor& p : plan) total += r.tensors().at(p.source).nbytes;
  for (const PlannedTensor& p : plan) {
    const CheckpointTensor& t = r.tensors().at(p.source);
    int64_t want = 1, have = 1;
    for (int64_t d : p.shape) want *= d;
    for (int64_t d : t.shape) have *= d;
    if (want != have)
      fail("{}: tensor '{}' has shape [{}], expected [{}]", t.location, t.name, fmt::join(t.shape, ", "),
           fmt::join(p.shape, ", "));
    TensorRecord rec;
    rec.name = p.name;
    rec.shape = p.shape;
    rec.dtype = opts.dtype;
    const uint8_t* view = tensor_view(r, p.source);
    if (!p.transpose && same_encoding(t.dtype, opts.dtype)) {
      if (!view) {  // readers that copy anyway: keep their buffer, no second copy
        m.storage.push_back(r.read(p.source));
        view = m.storage.back().data();
      }
      check_finite(t, view);
      rec.data = view;
    } else {
      std::vector<uint8_t> owned;
      if (!view) owned = r.read(p.source);
      m.storage.push_back(encode_tensor(t, view ? view : owned.data(), opts.dtype, p.transpose));
      rec.data = m.storage.back().data();
      if (view) release_pages(view, t.nbytes);
    }
    rec.nbytes = static_cast<size_t>(want) * dtype_size(opts.dtype);
    m.contents.tensors.push_back(std::move(rec));
    done += t.nbytes;
    if (opts.progress) opts.progress(done, total);
  }
}

void emit_owned(ConvertedModel& m, std::string name, std::vector<int64_t> shape, const std::vector<float>& values,
                DType dtype) {
  CheckpointTensor t{name, "F32", shape, values.size() * 4, "bertrt-convert"};
  m.storage.push_back(encode_tensor(t, reinterpret_cast<const uint8_t*>(values.data()), dtype, false));
  TensorRecord rec;
  rec.name = std::move(name);
  rec.shape = std::move(shape);
  rec.dtype = dtype;
  rec.data = m.storage.back().data();
  rec.nbytes = m.storage.back().size();
  m.contents.tensors.push_back(std::move(rec));
}

}  // namespace bertrt::convert
