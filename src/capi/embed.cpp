// Sentence embeddings and cross-encoder scores (embed/embedder.h, the CLI's embed and rerank).
#include <cmath>
#include <cstring>

#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/handles.h"
#include "embed/embedder.h"
#include "embed/embedding_precision.h"

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

// Quantized embeddings (embed/embedding_precision.h, the CLI's embed --precision).
extern "C" {

size_t bertrt_quantized_width(const char* precision, int32_t dim) {
  if (!precision || dim < 1) return 0;
  try {
    const EmbeddingPrecision p = parse_embedding_precision(precision, "precision");
    return p == EmbeddingPrecision::kFloat32 ? 0 : quantized_width(p, dim);
  } catch (const Error&) {
    return 0;
  }
}

bertrt_status bertrt_quantize_embeddings(const float* embeddings, size_t rows, int32_t dim,
                                         const char* precision, const float* ranges, void* out,
                                         size_t capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_quantize_embeddings";
    require(precision, fn, "precision");
    if (dim < 1) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: dim must be ≥ 1, got {}", fn, dim);
    EmbeddingPrecision p{};
    try {
      p = parse_embedding_precision(precision, std::string(fn) + ": precision");
    } catch (const Error& e) {
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}", e.what());
    }
    if (p == EmbeddingPrecision::kFloat32)
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: precision \"float32\" has nothing to quantize (bertrt_embed's output is it)",
               fn);
    const size_t need = rows * quantized_width(p, dim);
    if (rows > 0) {
      require(embeddings, fn, "embeddings");
      require(out, fn, "out");
    }
    if (capacity < need)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: capacity is {} bytes, [{}, {}] needs {}", fn,
               capacity, rows, quantized_width(p, dim), need);
    if (rows == 0) return;
    QuantizationRanges r;
    if (precision_needs_ranges(p)) {
      try {
        if (ranges) {
          r.min.assign(ranges, ranges + dim);
          r.max.assign(ranges + dim, ranges + 2 * size_t(dim));
          for (int32_t d = 0; d < dim; ++d)
            if (!std::isfinite(r.min[d]) || !std::isfinite(r.max[d]) || r.min[d] > r.max[d])
              api_fail(BERTRT_E_INVALID_ARGUMENT,
                       "{}: ranges[:, {}] = [{}, {}] is not a finite range (lowest, then highest)",
                       fn, d, r.min[d], r.max[d]);
        } else {
          r = calibration_ranges(embeddings, rows, dim);
        }
      } catch (const Error& e) {
        api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: {}", fn, e.what());
      }
    }
    const std::vector<uint8_t> q = quantize_embeddings(embeddings, rows, dim, p, &r);
    std::memcpy(out, q.data(), q.size());
  });
}

}  // extern "C"
