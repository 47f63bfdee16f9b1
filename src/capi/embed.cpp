// Sentence embeddings and cross-encoder scores (embed/embedder.h, the CLI's embed and rerank).
#include <cstring>

#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/handles.h"
#include "embed/embedder.h"

using namespace bertrt;
using namespace bertrt::capi;

namespace {

EmbedOptions embed_options(const bertrt_embed_options* given, const char* fn) {
  bertrt_embed_options o;
  bertrt_embed_options_init(&o);
  if (given) copy_options(o, *given, fn, "bertrt_embed_options_init");
  if (o.normalize != 0 && o.normalize != 1)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: options.normalize must be 0 or 1, got {}", fn,
             o.normalize);
  if (o.batch_size < 1)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: options.batch_size must be ≥ 1, got {}", fn,
             o.batch_size);
  if (o.dimensions < 0)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: options.dimensions must be ≥ 0, got {}", fn,
             o.dimensions);
  EmbedOptions e;
  e.dimensions = o.dimensions;
  e.normalize = o.normalize != 0;
  if (o.prompt) {
    require_utf8(o.prompt, fn, "options.prompt");
    e.prompt = std::string(o.prompt);
  }
  if (o.prompt_name) e.prompt_name = o.prompt_name;
  if (o.pooling) e.pooling = o.pooling;
  e.batch_size = o.batch_size;
  return e;
}

// The texts as strings, each checked to be UTF-8 (naming its index).
std::vector<std::string> texts_arg(const char* const* texts, size_t count, const char* fn,
                                   const char* name) {
  if (count > 0) require(texts, fn, name);
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!texts[i]) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: {}[{}] is NULL", fn, name, i);
    const std::string field = std::string(name) + "[" + std::to_string(i) + "]";
    require_utf8(texts[i], fn, field.c_str());
    out.emplace_back(texts[i]);
  }
  return out;
}

}  // namespace

extern "C" {

void bertrt_embed_options_init(bertrt_embed_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->normalize = 1;
  o->batch_size = 32;
}

bertrt_status bertrt_embedding_dim(const bertrt_model* model, const bertrt_embed_options* options,
                                   int32_t* out) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_embedding_dim";
    const bertrt_model& m = model_arg(model, fn);
    require(out, fn, "out");
    *out = 0;
    const EmbedOptions o = embed_options(options, fn);
    try {
      *out = embedding_dim(*m.loaded.model, o);
    } catch (const Error& e) {
      api_fail(BERTRT_E_UNSUPPORTED, "{}: {}", fn, e.what());
    }
  });
}

bertrt_status bertrt_embed(bertrt_model* model, const char* const* texts, size_t count,
                           const bertrt_embed_options* options, float* out, size_t capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_embed";
    bertrt_model& m = model_arg(model, fn);
    const EmbedOptions o = embed_options(options, fn);
    int dim = 0;
    try {
      dim = embedding_dim(*m.loaded.model, o);
    } catch (const Error& e) {
      api_fail(BERTRT_E_UNSUPPORTED, "{}: {}", fn, e.what());
    }
    const std::vector<std::string> in = texts_arg(texts, count, fn, "texts");
    const size_t need = count * size_t(dim);
    if (count > 0) require(out, fn, "out");
    if (capacity < need)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: capacity is {} floats, [{}, {}] needs {}", fn,
               capacity, count, dim, need);
    if (count == 0) return;
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    const std::vector<float> e =
        embed_texts(*m.loaded.model, *m.loaded.tokenizer, *m.backend, in, o);
    std::memcpy(out, e.data(), need * sizeof(float));
  });
}

bertrt_status bertrt_rerank(bertrt_model* model, const char* query, const char* const* passages,
                            size_t count, int32_t raw_scores, float* scores, size_t capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_rerank";
    bertrt_model& m = model_arg(model, fn);
    require(query, fn, "query");
    require_utf8(query, fn, "query");
    if (raw_scores != 0 && raw_scores != 1)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: raw_scores must be 0 or 1, got {}", fn, raw_scores);
    if (m.loaded.model->heads().resolved_kind() != HeadKind::kRegression)
      api_fail(BERTRT_E_UNSUPPORTED,
               "{}: {}: the model has a {} head, not a cross-encoder's one output (regression)",
               fn, m.source, head_kind_name(m.loaded.model->heads().resolved_kind()));
    const std::vector<std::string> in = texts_arg(passages, count, fn, "passages");
    if (count > 0) require(scores, fn, "scores");
    if (capacity < count)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: capacity is {}, {} passages need as many", fn,
               capacity, count);
    if (count == 0) return;
    RerankOptions o;
    o.raw_scores = raw_scores != 0;
    o.max_length = tokenizer_max_length(m.loaded.metadata,
                                        m.loaded.model->config().max_position_embeddings);
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    const std::vector<float> s =
        rerank_scores(*m.loaded.model, *m.loaded.tokenizer, *m.backend, query, in, o);
    std::memcpy(scores, s.data(), count * sizeof(float));
  });
}

}  // extern "C"
