// Loading a model (from a path or a caller's buffer), its backend, and the queries.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/handles.h"
#include "core/error.h"
#include "io/model_file.h"
#include "tasks/label_names.h"
#include "tasks/task_definition.h"

namespace bertrt::capi {

bertrt_model& model_arg(bertrt_model* m, const char* fn) {
  require(m, fn, "model");
  return *m;
}
const bertrt_model& model_arg(const bertrt_model* m, const char* fn) {
  require(m, fn, "model");
  return *m;
}

void set_task_and_labels(bertrt_model& m, const std::string& path) {
  // The task record is checked, as the CLI does: a hostile one (labels the head does not have,
  // negative SQuAD numbers) is refused before it answers anything.
  const BertModel& model = *m.loaded.model;
  check_task_record(m.loaded.metadata, model.heads(), model.config(), path);
  m.task.clear();
  const auto it = m.loaded.metadata.find("task");
  if (it != m.loaded.metadata.end()) {
    try {
      m.task = parse_task_definition(it->second, m.source).name;
    } catch (const Error&) {
      m.task.clear();  // an unknown task record: still usable through the raw heads
    }
  }
  if (m.task.empty()) m.task = model.heads().task;
  m.labels = prediction_labels(model.heads().labels, m.task);
}

namespace {

// The default checksum setting is process-wide (model_file.h); a load that asks otherwise sets
// it for the duration of the call. Loads are serialized so two threads do not race on it.
std::mutex load_mutex;

std::unique_ptr<Backend> make_api_backend(const bertrt_model_options& o) {
  const std::string name = o.backend ? o.backend : "cpu";
  if (o.num_threads < 0)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "options.num_threads must be ≥ 0 (0: every usable core), got {}",
             o.num_threads);
  if (o.verify_checksums != 0 && o.verify_checksums != 1)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "options.verify_checksums must be 0 or 1, got {}",
             o.verify_checksums);
  if (o.device < -1)
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "options.device must be ≥ 0 (a Vulkan device) or -1 (the default), got {}", o.device);
  if (o.device >= 0 && name != "vulkan")
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "options.device {} selects a Vulkan device: it needs backend \"vulkan\" (got \"{}\")",
             o.device, name);
  if (name == "cpu")
    return std::make_unique<CpuBackend>(o.num_threads > 0 ? cpu::usable_threads(o.num_threads) : 0);
  try {
    return make_backend(name, o.device);
  } catch (const Error& e) {
    api_fail(BERTRT_E_INVALID_ARGUMENT, "options.backend: {}", e.what());
  }
}

bertrt_model* load(const char* fn, const std::string& path, const std::string& source,
                   const bertrt_model_options* options) {
  bertrt_model_options o;
  bertrt_model_options_init(&o);
  if (options) copy_options(o, *options, fn, "bertrt_model_options_init");
  auto backend = make_api_backend(o);
  auto m = std::make_unique<bertrt_model>();
  {
    std::lock_guard<std::mutex> lock(load_mutex);
    const bool before = default_verify_checksums();
    set_default_verify_checksums(o.verify_checksums != 0 && before);
    try {
      m->loaded = load_model(path);
    } catch (...) {
      set_default_verify_checksums(before);
      throw;
    }
    set_default_verify_checksums(before);
  }
  // The handle's backend serves this one model, whose weights only a trainer changes:
  // bertrt_trainer_create withdraws the declaration before it touches them (trainer.cpp).
  if (auto* cpu_be = dynamic_cast<CpuBackend*>(backend.get())) cpu_be->set_constant_weights(true);
  m->backend = std::move(backend);
  m->source = source;
  set_task_and_labels(*m, path);
  return m.release();
}

bertrt_head_kind head_kind(HeadKind k) {
  switch (k) {
    case HeadKind::kSequenceClassification:
      return BERTRT_HEAD_SEQUENCE_CLASSIFICATION;
    case HeadKind::kRegression:
      return BERTRT_HEAD_REGRESSION;
    case HeadKind::kTokenClassification:
      return BERTRT_HEAD_TOKEN_CLASSIFICATION;
    case HeadKind::kQuestionAnswering:
      return BERTRT_HEAD_SPAN;
    case HeadKind::kNone:
      break;
  }
  return BERTRT_HEAD_NONE;
}

}  // namespace
}  // namespace bertrt::capi

using namespace bertrt;
using namespace bertrt::capi;

extern "C" {

void bertrt_model_options_init(bertrt_model_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->backend = "cpu";
  o->device = -1;
  o->num_threads = 0;
  o->verify_checksums = 1;
}

bertrt_status bertrt_model_load(const char* path, const bertrt_model_options* options,
                                bertrt_model** out) {
  return guard(BERTRT_E_MODEL, [&] {
    require(path, "bertrt_model_load", "path");
    require(out, "bertrt_model_load", "out");
    *out = nullptr;
    struct stat st;
    if (::stat(path, &st) != 0)
      api_fail(BERTRT_E_IO, "bertrt_model_load: path {}: {}", path, std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      api_fail(BERTRT_E_IO, "bertrt_model_load: path {}: not a regular file", path);
    *out = load("bertrt_model_load", path, path, options);
  });
}

bertrt_status bertrt_model_load_buffer(const void* data, size_t size,
                                       const bertrt_model_options* options, bertrt_model** out) {
  return guard(BERTRT_E_MODEL, [&] {
    require(data, "bertrt_model_load_buffer", "data");
    require(out, "bertrt_model_load_buffer", "out");
    *out = nullptr;
    if (size == 0) api_fail(BERTRT_E_INVALID_ARGUMENT, "bertrt_model_load_buffer: size is 0");
    // The loader maps files; an anonymous memory file holds the one copy of the buffer, so the
    // weights stay mapped (no second copy) and the caller may free its buffer at once.
    const int fd = memfd_create("bertrt-model", MFD_CLOEXEC);
    if (fd < 0)
      api_fail(BERTRT_E_IO, "bertrt_model_load_buffer: memfd_create: {}", std::strerror(errno));
    const auto* p = static_cast<const char*>(data);
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, p + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        api_fail(BERTRT_E_IO, "bertrt_model_load_buffer: copying {} bytes: {}", size,
                 std::strerror(err));
      }
      done += size_t(n);
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
      *out = load("bertrt_model_load_buffer", path, "<buffer>", options);
    } catch (const Error& e) {
      ::close(fd);
      std::string msg = e.what();  // name the buffer, not the memory file
      for (size_t at; (at = msg.find(path)) != std::string::npos;)
        msg.replace(at, path.size(), "<buffer>");
      api_fail(BERTRT_E_MODEL, "bertrt_model_load_buffer: {}", msg);
    }
    ::close(fd);  // the mapping keeps the memory file alive
  });
}

void bertrt_model_free(bertrt_model* model) { delete model; }

bertrt_status bertrt_model_config(const bertrt_model* model, bertrt_config* out) {
  return guard(BERTRT_E_FAILED, [&] {
    const BertConfig& c = model_arg(model, "bertrt_model_config").loaded.model->config();
    require(out, "bertrt_model_config", "out");
    out->vocab_size = c.vocab_size;
    out->hidden_size = c.hidden_size;
    out->num_hidden_layers = c.num_hidden_layers;
    out->num_attention_heads = c.num_attention_heads;
    out->intermediate_size = c.intermediate_size;
    out->max_position_embeddings = c.max_position_embeddings;
    out->type_vocab_size = c.type_vocab_size;
    out->layer_norm_eps = c.layer_norm_eps;
  });
}

bertrt_status bertrt_model_heads(const bertrt_model* model, bertrt_heads* out) {
  return guard(BERTRT_E_FAILED, [&] {
    const BertModel& m = *model_arg(model, "bertrt_model_heads").loaded.model;
    require(out, "bertrt_model_heads", "out");
    const HeadsConfig& h = m.heads();
    out->kind = head_kind(h.resolved_kind());
    const bool classes = h.resolved_kind() == HeadKind::kSequenceClassification ||
                         h.resolved_kind() == HeadKind::kTokenClassification;
    out->num_labels = classes ? int32_t(h.labels.size()) : 0;
    out->has_mlm = h.mlm;
    out->has_nsp = h.nsp;
    out->int8 = m.quant_mode() == QuantMode::kInt8;
  });
}

bertrt_status bertrt_model_label(const bertrt_model* model, int32_t index, const char** out) {
  return guard(BERTRT_E_FAILED, [&] {
    const std::vector<std::string>& labels = model_arg(model, "bertrt_model_label").labels;
    require(out, "bertrt_model_label", "out");
    if (index < 0 || size_t(index) >= labels.size())
      api_fail(BERTRT_E_INVALID_ARGUMENT, "bertrt_model_label: index {} is outside [0, {})", index,
               labels.size());
    *out = labels[size_t(index)].c_str();
  });
}

bertrt_status bertrt_model_task(const bertrt_model* model, const char** out) {
  return guard(BERTRT_E_FAILED, [&] {
    const bertrt_model& m = model_arg(model, "bertrt_model_task");
    require(out, "bertrt_model_task", "out");
    *out = m.task.c_str();
  });
}

bertrt_status bertrt_model_token(const bertrt_model* model, int32_t token_id, const char** out) {
  return guard(BERTRT_E_FAILED, [&] {
    const Vocab& v = model_arg(model, "bertrt_model_token").loaded.tokenizer->vocab();
    require(out, "bertrt_model_token", "out");
    if (token_id < 0 || token_id >= v.size())
      api_fail(BERTRT_E_INVALID_ARGUMENT, "bertrt_model_token: token_id {} is outside [0, {})",
               token_id, v.size());
    *out = v.token(token_id).c_str();
  });
}

}  // extern "C"
