// LoRA adapters over a model handle's base (bertrt.h "LoRA adapters"; io/adapter_io.h): loaded
// once, shared by any number of handles of that base, set per handle.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/handles.h"
#include "core/error.h"
#include "io/adapter_io.h"
#include "tasks/task_definition.h"

namespace bertrt::capi {
namespace {

// The base's checksum, taken once per handle: a pass over every base weight (BERT-base: 420 MB).
// Under the forward lock, which also keeps a trainer from changing the weights meanwhile. A set
// adapter does not change it: the model's own parameters stay the base's.
uint32_t base_checksum(bertrt_model& m) {
  if (!m.base_checksum) m.base_checksum = adapter_base_checksum(*m.loaded.model);
  return *m.base_checksum;
}

}  // namespace
}  // namespace bertrt::capi

using namespace bertrt;
using namespace bertrt::capi;

extern "C" {

bertrt_status bertrt_adapter_load(bertrt_model* base, const char* path, bertrt_adapter** out) {
  return guard(BERTRT_E_MODEL, [&] {
    const char* fn = "bertrt_adapter_load";
    bertrt_model& m = model_arg(base, fn);
    require(path, fn, "path");
    require(out, fn, "out");
    *out = nullptr;
    struct stat st;
    if (::stat(path, &st) != 0)
      api_fail(BERTRT_E_IO, "{}: path {}: {}", fn, path, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) api_fail(BERTRT_E_IO, "{}: path {}: not a regular file", fn, path);
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    if (m.training)
      api_fail(BERTRT_E_STATE, "{}: a trainer owns the model: its base weights are changing", fn);
    auto a = std::make_unique<bertrt_adapter>();
    a->adapter = load_adapter(path, *m.loaded.model, base_checksum(m), m.source);
    // Its task record is checked now, as a model's is at load, so setting it cannot fail on it.
    check_task_record(a->adapter->metadata, a->adapter->heads(), a->adapter->config(), path);
    *out = a.release();
  });
}

void bertrt_adapter_free(bertrt_adapter* adapter) { delete adapter; }

bertrt_status bertrt_model_set_adapter(bertrt_model* model, const bertrt_adapter* adapter) {
  return guard(BERTRT_E_INVALID_ARGUMENT, [&] {
    const char* fn = "bertrt_model_set_adapter";
    bertrt_model& m = model_arg(model, fn);
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    if (m.training)
      api_fail(BERTRT_E_STATE, "{}: a trainer owns the model: free it before setting an adapter",
               fn);
    const uint32_t sum = base_checksum(m);
    use_adapter(m.loaded, adapter ? adapter->adapter : nullptr, sum);
    set_task_and_labels(m, adapter ? adapter->adapter->source : m.source);
  });
}

}  // extern "C"
