/* bertrt C API: load a .brt model, tokenize, run the encoder and its heads, fine-tune on the
 * device. C99; the ABI is stable within a major version (SONAME libbertrt.so.0).
 *
 * Conventions
 * - Every call returns a bertrt_status. On failure bertrt_last_error() returns the one-line
 *   message the CLI would print (it names the argument, file or field); the message is
 *   thread-local and stays valid until the next failing call on the same thread.
 * - No C++ exception crosses this API and no call aborts the process on bad input.
 * - Handles are opaque; a NULL handle is an error (BERTRT_E_INVALID_ARGUMENT), except for the
 *   *_free functions, which accept NULL.
 * - Output buffers are the caller's: every output pointer comes with its capacity in elements;
 *   a buffer too small is an error naming the argument and the size needed, and nothing is
 *   written to it.
 * - Option structs start with struct_size: fill them with the *_init function, then change
 *   fields, so a program built against an older header keeps working with a newer library.
 *
 * Thread safety
 * - A bertrt_model may be used from several threads at once for inference (tokenize, encode,
 *   the heads, fill-mask): the calls that run the network are serialized on the model (one
 *   forward at a time; each forward uses the model's num_threads cpu threads). Tokenization and
 *   queries run concurrently. For parallel forwards, load one model per thread.
 * - A bertrt_adapter is immutable once loaded: one adapter may run on several models at once,
 *   each used from its own thread. bertrt_model_set_adapter waits for a running forward of that
 *   model; the queries that describe the model's head (bertrt_model_heads, _label, _task) change
 *   with it, so set the adapter where no other thread is asking them at the same moment.
 * - A bertrt_trainer is single-threaded: call it from one thread at a time. While a trainer
 *   exists its model must not be used for inference from other threads, and the trainer must be
 *   freed before its model.
 */
#ifndef BERTRT_BERTRT_H
#define BERTRT_BERTRT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define BERTRT_API __declspec(dllexport)
#elif defined(__GNUC__)
#define BERTRT_API __attribute__((visibility("default")))
#else
#define BERTRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header: CMake's project(VERSION) checks these at configure time. */
#define BERTRT_VERSION_MAJOR 0
#define BERTRT_VERSION_MINOR 2
#define BERTRT_VERSION_PATCH 0
#define BERTRT_VERSION_STRING "0.2.0"

typedef enum bertrt_status {
  BERTRT_OK = 0,
  BERTRT_E_INVALID_ARGUMENT = 1, /* NULL handle/pointer, bad value, buffer of the wrong size */
  BERTRT_E_MODEL = 2,            /* the model file cannot be read or fails verification */
  BERTRT_E_IO = 3,               /* a data or output file cannot be read or written */
  BERTRT_E_UNSUPPORTED = 4,      /* not for this model (no such head) or not in this build */
  BERTRT_E_STATE = 5,            /* the handle cannot do this now (a trainer after a failed step) */
  BERTRT_E_OUT_OF_MEMORY = 6,
  BERTRT_E_FAILED = 7,   /* any other error; bertrt_last_error() says what */
  BERTRT_E_CANCELLED = 8 /* a progress callback asked to stop */
} bertrt_status;

/* The message of the last failing call on this thread ("" when none). */
BERTRT_API const char* bertrt_last_error(void);
/* "ok", "invalid argument", ... */
BERTRT_API const char* bertrt_status_string(bertrt_status status);
/* "0.2.0": the library's version (may be newer than the header's BERTRT_VERSION_STRING). */
BERTRT_API const char* bertrt_version(void);

/* ---- models ---------------------------------------------------------------------------------- */

typedef struct bertrt_model bertrt_model;

typedef struct bertrt_model_options {
  uint32_t struct_size;
  const char* backend;      /* "cpu" (default), "reference", "vulkan" (when built), "checked" */
  int32_t device;           /* vulkan device index (backend "vulkan" only); -1: BERTRT_VULKAN_DEVICE
                               or 0 */
  int32_t num_threads;      /* cpu backend threads; 0: BERTRT_NUM_THREADS or every core the
                               process may run on (affinity); capped at those cores */
  int32_t verify_checksums; /* 1 (default): check the tensors' CRC-32C; 0: trusted files only (0 or
                               1) */
} bertrt_model_options;

BERTRT_API void bertrt_model_options_init(bertrt_model_options* options);

/* Opens, verifies and maps `path`. options may be NULL (the defaults). */
BERTRT_API bertrt_status bertrt_model_load(const char* path, const bertrt_model_options* options,
                                           bertrt_model** out);
/* The same from a caller's buffer (a whole .brt file); the buffer is copied once and may be
 * freed when the call returns. */
BERTRT_API bertrt_status bertrt_model_load_buffer(const void* data, size_t size,
                                                  const bertrt_model_options* options,
                                                  bertrt_model** out);
BERTRT_API void bertrt_model_free(bertrt_model* model);

typedef struct bertrt_config {
  int32_t vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size;
  int32_t max_position_embeddings, type_vocab_size;
  float layer_norm_eps;
} bertrt_config;

BERTRT_API bertrt_status bertrt_model_config(const bertrt_model* model, bertrt_config* out);

typedef enum bertrt_head_kind {
  BERTRT_HEAD_NONE = 0,                    /* encoder only (or pre-training heads) */
  BERTRT_HEAD_SEQUENCE_CLASSIFICATION = 1, /* bertrt_classify: [B, num_labels] logits */
  BERTRT_HEAD_REGRESSION = 2,              /* bertrt_classify: [B] scores */
  BERTRT_HEAD_TOKEN_CLASSIFICATION = 3,    /* bertrt_tag_tokens: [B, T, num_labels] logits */
  BERTRT_HEAD_SPAN = 4                     /* bertrt_spans: [B, T] start and end logits */
} bertrt_head_kind;

typedef struct bertrt_heads {
  bertrt_head_kind kind; /* the fine-tuning head */
  int32_t num_labels;    /* its classes (0 for regression and spans) */
  int32_t has_mlm;       /* masked-LM head: bertrt_fill_mask */
  int32_t has_nsp;       /* next-sentence head */
  int32_t int8;          /* 1: int8 weights and kernels (a quantized file) */
} bertrt_heads;

BERTRT_API bertrt_status bertrt_model_heads(const bertrt_model* model, bertrt_heads* out);
/* The name of class `index` of the fine-tuning head, as `bertrt predict` and Python print it: the
 * model's own label (a converted classifier's id2label, e.g. "POSITIVE") where it has one, else
 * its task's class name ("positive" for sst2), else the stored label ("LABEL_1"). Valid while the
 * model lives, until a trainer is created on it or its adapter changes. */
BERTRT_API bertrt_status bertrt_model_label(const bertrt_model* model, int32_t index,
                                            const char** out);
/* The task the model was fine-tuned for ("sst2", "tsv", "conll2003", "squad"; "" if none). */
BERTRT_API bertrt_status bertrt_model_task(const bertrt_model* model, const char** out);
/* The vocabulary entry of `token_id` ("[CLS]", "##ing"); valid while the model lives. */
BERTRT_API bertrt_status bertrt_model_token(const bertrt_model* model, int32_t token_id,
                                            const char** out);

/* ---- tokenization ---------------------------------------------------------------------------- */

/* [CLS] A [SEP] (B [SEP]) with the model's tokenizer. text_b may be NULL. max_seq_length > 0
 * truncates longest-first (Hugging Face "longest_first"); 0 keeps everything. Writes *length
 * pieces into each non-NULL array, which hold `capacity` elements (offsets: 2 · capacity):
 * token ids, token type ids, attention mask (all 1) and byte offsets [begin, end) of each piece
 * in its own text (A for type 0, B for type 1; -1, -1 for [CLS] and [SEP]). *length is set even
 * when capacity is too small (the call then fails), so a caller can size its buffers. Texts
 * must be UTF-8 (BERTRT_E_INVALID_ARGUMENT names the first byte that is not). */
BERTRT_API bertrt_status bertrt_tokenize(const bertrt_model* model, const char* text_a,
                                         const char* text_b, int32_t max_seq_length,
                                         int32_t* input_ids, int32_t* token_type_ids,
                                         int32_t* attention_mask, int64_t* offsets, size_t capacity,
                                         size_t* length);

/* ---- inference on caller batches ------------------------------------------------------------- */

/* B rows of T ids, row-major. token_type_ids NULL: all 0; attention_mask NULL: all 1 (0 marks
 * padding). T must not exceed max_position_embeddings. */
typedef struct bertrt_batch {
  int32_t batch_size; /* B */
  int32_t seq_len;    /* T */
  const int32_t* input_ids;
  const int32_t* token_type_ids;
  const int32_t* attention_mask;
} bertrt_batch;

/* The encoder: last_hidden_state [B, T, H] and pooler_output [B, H] (either may be NULL);
 * capacities in floats. */
BERTRT_API bertrt_status bertrt_encode(bertrt_model* model, const bertrt_batch* batch,
                                       float* last_hidden_state, size_t last_hidden_capacity,
                                       float* pooled_output, size_t pooled_capacity);
/* Sequence classification logits [B, num_labels] or regression scores [B]. */
BERTRT_API bertrt_status bertrt_classify(bertrt_model* model, const bertrt_batch* batch,
                                         float* scores, size_t capacity);
/* Token classification logits [B, T, num_labels]. */
BERTRT_API bertrt_status bertrt_tag_tokens(bertrt_model* model, const bertrt_batch* batch,
                                           float* logits, size_t capacity);
/* Question answering: start and end logits [B, T] each (capacity of each). */
BERTRT_API bertrt_status bertrt_spans(bertrt_model* model, const bertrt_batch* batch,
                                      float* start_logits, float* end_logits, size_t capacity);

typedef struct bertrt_fill_candidate {
  int32_t position; /* the [MASK] piece's index in the encoding */
  int32_t token_id; /* bertrt_model_token() spells it */
  float probability;
} bertrt_fill_candidate;

/* The MLM head's top_k candidates for each [MASK] of `text`, most probable first: *count =
 * masks · top_k entries (top_k capped at the vocabulary size). */
BERTRT_API bertrt_status bertrt_fill_mask(bertrt_model* model, const char* text, int32_t top_k,
                                          bertrt_fill_candidate* out, size_t capacity,
                                          size_t* count);

/* ---- sentence embeddings and reranking -------------------------------------------------------- */

/* What bertrt_embed computes; fill with bertrt_embed_options_init, then change fields. */
typedef struct bertrt_embed_options {
  uint32_t struct_size;
  int32_t dimensions;      /* keep the first D dimensions, then normalize (Matryoshka); 0: all */
  int32_t normalize;       /* 1 (default): L2-normalized after the truncation; 0: the model's
                              own output (its Normalize module still applies), truncated */
  const char* prompt_name; /* the model's prompt of this name before each text; NULL: its default */
  const char* prompt;      /* this text before each text instead ("" for none); NULL: prompt_name */
  const char* pooling;     /* a model without an embedding head: "cls", "mean", "max",
                              "mean_sqrt_len_tokens", "weightedmean", "lasttoken"; NULL: the head */
  int32_t batch_size;      /* sequences a forward where batches are padded (the Vulkan backend;
                              default 32); elsewhere texts are packed without padding, 2048
                              tokens a forward, as `bertrt embed` packs them */
} bertrt_embed_options;

BERTRT_API void bertrt_embed_options_init(bertrt_embed_options* options);
/* The width of the embeddings bertrt_embed writes with `options` (NULL: the defaults). */
BERTRT_API bertrt_status bertrt_embedding_dim(const bertrt_model* model,
                                              const bertrt_embed_options* options, int32_t* out);
/* Sentence embeddings of `count` UTF-8 texts, [count, bertrt_embedding_dim] row-major floats
 * into `out` (capacity in floats), as sentence-transformers' encode computes them with the
 * model's embedding head (bertrt-convert of a sentence-transformers folder). Texts longer than
 * the model's max_seq_length are truncated. */
BERTRT_API bertrt_status bertrt_embed(bertrt_model* model, const char* const* texts, size_t count,
                                      const bertrt_embed_options* options, float* out,
                                      size_t capacity);
/* Quantizes `rows` embeddings [rows, dim] (e.g. bertrt_embed's) as sentence-transformers'
 * quantize_embeddings: `precision` "int8", "uint8" (each dimension's range [min, max] in 256 steps),
 * "binary" or "ubinary" (the bits x > 0, 8 to a byte, the first dimension in the highest bit;
 * binary: byte − 128 as int8). `ranges`: [2, dim] floats, the lowest values then the highest
 * (upstream's `ranges`); NULL: those of the embeddings themselves. Values outside the ranges
 * saturate. Writes [rows, bertrt_quantized_width] int8 / uint8 values into `out` (capacity in
 * bytes). */
BERTRT_API bertrt_status bertrt_quantize_embeddings(const float* embeddings, size_t rows,
                                                    int32_t dim, const char* precision,
                                                    const float* ranges, void* out,
                                                    size_t capacity);
/* Bytes a row of `dim` dimensions quantizes to at `precision`: dim, or ceil(dim / 8) for binary
 * and ubinary (0 for an unknown precision). */
BERTRT_API size_t bertrt_quantized_width(const char* precision, int32_t dim);
/* Cross-encoder scores of (query, passages[i]) into scores[i] (capacity ≥ count): sigmoid of the
 * logit, as CrossEncoder.predict gives them, or the logit itself when raw_scores is 1. The model
 * is a one-output sequence classifier (BERTRT_HEAD_REGRESSION). */
BERTRT_API bertrt_status bertrt_rerank(bertrt_model* model, const char* query,
                                       const char* const* passages, size_t count,
                                       int32_t raw_scores, float* scores, size_t capacity);

/* ---- LoRA adapters --------------------------------------------------------------------------- */

/* A LoRA adapter (written by `bertrt finetune --lora-r`) read for a base model: only its own
 * tensors (the low-rank A and B of every adapted Linear, and its task head). Any number of
 * adapters may be loaded over one base, and one adapter may run on several model handles of that
 * base; the base's weights stay where the model handle maps them, never copied. */
typedef struct bertrt_adapter bertrt_adapter;

/* Reads the adapter file `path` for `base` (a model handle of the base it was trained on) and
 * checks it against that base before returning: a model file instead of an adapter, an adapter
 * trained on another base (its base_model_checksum, or the config's shapes) or a LoRA record
 * bertrt does not implement fail with BERTRT_E_MODEL naming the file and the key; a missing file
 * BERTRT_E_IO. The first call on a handle reads every base weight once (the checksum). */
BERTRT_API bertrt_status bertrt_adapter_load(bertrt_model* base, const char* path,
                                             bertrt_adapter** out);
/* Frees the caller's reference: a model that has run the adapter keeps its own until the model
 * is freed, so freeing an adapter that is set on a model is safe. */
BERTRT_API void bertrt_adapter_free(bertrt_adapter* adapter);
/* From the next call on, `model` runs `adapter`: the classify/tag/spans/encode/embed/rerank
 * calls add its low-rank updates to the base's Linears and run its head, and bertrt_model_heads,
 * _label and _task describe its head and task. NULL detaches it: the base's own heads again.
 * Switching copies no weight. BERTRT_E_INVALID_ARGUMENT when the adapter was loaded for another
 * base; BERTRT_E_STATE while a trainer owns the model (and bertrt_trainer_create refuses a model
 * that runs an adapter). */
BERTRT_API bertrt_status bertrt_model_set_adapter(bertrt_model* model,
                                                  const bertrt_adapter* adapter);

/* ---- on-device fine-tuning ------------------------------------------------------------------- */

typedef struct bertrt_trainer bertrt_trainer;

/* `bertrt finetune`'s options, same names and defaults. */
typedef struct bertrt_finetune_options {
  uint32_t struct_size;
  const char* task; /* sst2 cola mrpc stsb rte qnli | tsv | conll2003 | squad (required) */
  /* task "tsv": columns (header name or 0-based index), labels "a,b,c" or regression */
  const char* text_column;
  const char* text_pair_column;
  const char* label_column;
  const char* labels;
  int32_t regression;
  int32_t no_header;
  int32_t epochs;          /* 3 */
  int64_t max_steps;       /* 0: epochs */
  int32_t batch_size;      /* 32 */
  int32_t eval_batch_size; /* 64 */
  int32_t max_seq_length;  /* 0: 128 (squad 384) */
  float learning_rate;     /* 2e-5 */
  float warmup_ratio;      /* 0.1 */
  float weight_decay;      /* 0.01 */
  uint64_t seed;           /* 42 */
  int32_t group_by_length; /* 0 */
  int32_t qat;             /* 1: quantization-aware int8 training; save writes the int8 model */
  float hidden_dropout_prob; /* 0: none; in [0, 1), --hidden-dropout-prob (cpu/reference) */
  float attention_probs_dropout_prob; /* 0: none; --attention-probs-dropout-prob */
  /* Memory (bertrt finetune's --freeze-embeddings, --freeze-layers K, --recompute) */
  int32_t freeze_embeddings; /* 0; 1: keep bert.embeddings.* fixed */
  int32_t freeze_layers;     /* 0; K in [0, num_hidden_layers]: keep the bottom K layers fixed */
  int32_t recompute;         /* 0; 1: activation recomputation (same bits, less memory; not qat) */
} bertrt_finetune_options;

BERTRT_API void bertrt_finetune_options_init(bertrt_finetune_options* options);

typedef struct bertrt_step_metrics {
  int64_t step, total_steps, epoch;
  double loss, learning_rate, grad_norm, tokens_per_second, elapsed_seconds;
} bertrt_step_metrics;

/* Called after every step; return non-zero to stop (the step call then returns
 * BERTRT_E_CANCELLED; the trainer stays usable). */
typedef int (*bertrt_progress_fn)(const bertrt_step_metrics* metrics, void* user_data);

/* A trainer for `model` (trained in place: after training the model handle runs the fine-tuned
 * weights) on the training file `train_path` (the task's format: GLUE TSV, CoNLL, SQuAD JSON).
 * Puts the task's fresh head on the model, as `bertrt finetune` does. train_path may be NULL for
 * a sequence task (not "tsv") fed through bertrt_trainer_step_batch; options.max_steps then sets
 * the schedule's length. */
BERTRT_API bertrt_status bertrt_trainer_create(bertrt_model* model,
                                               const bertrt_finetune_options* options,
                                               const char* train_path, bertrt_trainer** out);
BERTRT_API void bertrt_trainer_free(bertrt_trainer* trainer);
BERTRT_API bertrt_status bertrt_trainer_set_progress(bertrt_trainer* trainer, bertrt_progress_fn fn,
                                                     void* user_data);
/* Steps to the end of training (epochs or max_steps). */
BERTRT_API bertrt_status bertrt_trainer_total_steps(const bertrt_trainer* trainer, int64_t* out);
/* Up to `steps` optimizer steps (fewer at the end of training); *last (may be NULL) gets the
 * last step's metrics; BERTRT_E_STATE once training is finished. After a failed step every
 * later step fails with BERTRT_E_STATE: the weights may be half-updated; save refuses too, so no
 * such model reaches a file. */
BERTRT_API bertrt_status bertrt_trainer_step(bertrt_trainer* trainer, int64_t steps,
                                             bertrt_step_metrics* last);
/* One optimizer step on a caller batch of a sequence task: labels [B] (class ids, classification)
 * or scores [B] (regression). Counts against total_steps like the file's steps. */
BERTRT_API bertrt_status bertrt_trainer_step_batch(bertrt_trainer* trainer,
                                                   const bertrt_batch* batch, const int32_t* labels,
                                                   const float* scores,
                                                   bertrt_step_metrics* metrics);
/* The task's metrics on `data_path` as JSON (the keys of `bertrt eval --json`), written with its
 * NUL into json (capacity bytes); *length (may be NULL) gets strlen + 1 even when too small. */
BERTRT_API bertrt_status bertrt_trainer_evaluate(bertrt_trainer* trainer, const char* data_path,
                                                 char* json, size_t capacity, size_t* length);
/* Reads `data_path` as bertrt_trainer_evaluate would and checks that it can be evaluated (the
 * task's format and labels, enough examples for its metric), without running the model: to
 * refuse a dev set before training on it. BERTRT_E_IO names the file and the problem. */
BERTRT_API bertrt_status bertrt_trainer_check_data(bertrt_trainer* trainer, const char* data_path);
/* Writes the model atomically (temp file, fsync, rename: a failure leaves an existing file as
 * it was): fp32, or with qat the int8 model; after a qat save the model is int8 and the trainer
 * takes no more steps. */
BERTRT_API bertrt_status bertrt_trainer_save(bertrt_trainer* trainer, const char* path);
/* Checks that `path` can be written now as bertrt_trainer_save and bertrt_convert write it
 * (through symbolic links): its folder exists and takes a new file, and the target is not a
 * folder, device or FIFO. To refuse an output before training for it; BERTRT_E_IO names the path,
 * the link's target and the problem. */
BERTRT_API bertrt_status bertrt_check_output(const char* path);

/* ---- host converter -------------------------------------------------------------------------- */

/* What `bertrt-convert` does: `to` "brt" (NULL: the default) reads a Hugging Face folder, a
 * torch.save or safetensors file or an original TF checkpoint folder at `input` and writes the
 * .brt file `output` atomically, its weights stored as `dtype` ("f32" (NULL), "f16", "bf16");
 * `vocab` (may be NULL) replaces or supplies vocab.txt; a sentence-transformers folder keeps its
 * embedding head. `to` "hf" writes the .brt `input` as a Hugging Face folder `output`, and
 * "sentence-transformers" as a sentence-transformers folder (a model with an embedding head). Warnings go to stderr. In the shared library of host builds only
 * (elsewhere BERTRT_E_UNSUPPORTED; libbertrt.a does not define it). */
BERTRT_API bertrt_status bertrt_convert(const char* input, const char* output, const char* to,
                                        const char* dtype, const char* vocab);

#ifdef __cplusplus
}
#endif

#endif /* BERTRT_BERTRT_H */
