// What the C API's opaque handles hold (bertrt/bertrt.h declares them incomplete).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "io/model_io.h"

struct bertrt_model {
  bertrt::LoadedModel loaded;
  std::unique_ptr<bertrt::Backend> backend;
  std::string source;  // the path, or "<buffer>": what messages name
  std::string task;    // the fine-tuned task's name ("" if none)
  // The class names bertrt_model_label returns (tasks/label_names.h: the head's own, else the
  // task's); set at load and when a trainer gives the model its task's head.
  std::vector<std::string> labels;
  // One forward at a time: BertModel keeps the last forward's activations and outputs, so two
  // threads must not run it at once (bertrt.h "Thread safety").
  std::mutex forward_mutex;
  bool training = false;  // a trainer owns the model (inference still allowed between steps)
  // adapter_base_checksum of the base, taken at the first adapter call (adapter.cpp): the
  // weights only change under a trainer, which refuses a model running an adapter.
  std::optional<uint32_t> base_checksum;
};

// A LoRA adapter read for a base (io/adapter_io.h): immutable, shared by every model handle that
// runs it; a model keeps it alive while it runs it, so it may be freed at any time.
struct bertrt_adapter {
  std::shared_ptr<const bertrt::LoraAdapter> adapter;
};

namespace bertrt::capi {

// The model of a handle, or BERTRT_E_INVALID_ARGUMENT naming `fn`'s argument.
bertrt_model& model_arg(bertrt_model* m, const char* fn);
const bertrt_model& model_arg(const bertrt_model* m, const char* fn);
// m.task and m.labels from its metadata's task record and its heads (at load, and when an
// adapter is set or detached).
void set_task_and_labels(bertrt_model& m, const std::string& path);

}  // namespace bertrt::capi
