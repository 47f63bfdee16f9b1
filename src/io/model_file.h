// The bertrt model file (.brt, schema/bertrt.fbs): config, tokenizer, heads, HF-named tensors,
// optional training state and metadata in one FlatBuffer, tensor bytes in 64-byte-aligned segments
// after it, so weights are memory-mapped and used without copying.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "model/config.h"

namespace bertrt {

enum class DType { f32, f16, bf16, i8, i32 };

const char* dtype_name(DType dtype);  // "f32", "f16", ...
size_t dtype_size(DType dtype);       // bytes per element

struct TensorRecord {
  std::string name;            // Hugging Face state-dict name
  std::vector<int64_t> shape;  // empty = scalar
  DType dtype = DType::f32;
  // Quantization (integer dtypes): real = (q - zero_point) * scale; axis -1 = one scale for the
  // tensor, else one scale per index along `axis`. zero_points: empty (all 0), one, or per scale.
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
  int axis = -1;
  const uint8_t* data = nullptr;  // reader: into the mapping; writer: caller memory
  size_t nbytes = 0;              // numel * dtype_size(dtype)
  // Reader: the CRC-32C the file stores for the segment (absent only in files written before
  // checksums, which load only unverified). The writer ignores it and computes the checksum from
  // `data`.
  std::optional<uint32_t> crc32c;

  int64_t numel() const;
};

struct TokenizerSpec {
  std::vector<std::string> vocab;  // id = index
  bool do_lower_case = true;
  std::optional<bool> strip_accents;  // unset: follows do_lower_case (HF BertTokenizer)
  bool tokenize_chinese_chars = true;
  int max_input_chars_per_word = 100;
  std::string unk_token = "[UNK]", sep_token = "[SEP]", pad_token = "[PAD]", cls_token = "[CLS]",
              mask_token = "[MASK]";
};

struct TrainingState {
  int64_t step = 0;
  std::string optimizer;                        // e.g. "adamw", "bert_adam"
  std::map<std::string, double> hyper;          // lr, beta1, beta2, eps, weight_decay, ...
  std::map<std::string, std::string> schedule;  // e.g. kind=linear, warmup_steps=1000
  std::vector<uint8_t> rng_state;
  uint64_t data_cursor = 0;
  std::vector<TensorRecord> optimizer_tensors;  // moments, named like the weights they belong to
};

struct ModelContents {
  BertConfig config;
  HeadsConfig heads;
  TokenizerSpec tokenizer;
  std::vector<TensorRecord> tensors;
  std::optional<TrainingState> training_state;
  std::map<std::string, std::string> metadata;  // provenance, free key/value pairs
};

// The format version this build writes and the newest it reads.
constexpr uint32_t kModelFormatVersion = 1;
// Every tensor segment starts at a multiple of this many bytes from the start of the file.
constexpr size_t kSegmentAlignment = 64;

// Writes atomically: temp file in the same folder, fsync, rename. Contents are validated first
// (config, non-empty vocab, unique tensor names, nbytes == numel * itemsize, quantization shape);
// on any error the temp file is removed and an existing file at `path` is untouched. Throws
// bertrt::Error (e.g. a missing folder is named).
void write_model_file(const std::string& path, const ModelContents& m);

// How ModelFile::open reads a file.
struct OpenOptions {
  // Require the checksums (the header's and every decoded segment's: a file without them is
  // refused, naming how to re-save it) and recompute each, failing on a mismatch. The checksums
  // are computed in the same pass over the tensor bytes as the value checks. Off only for trusted
  // files: see default_verify_checksums().
  bool verify_checksums = true;
  // Decode the optional training state (optimizer moments, RNG state, data cursor) and check its
  // segments' checksums and values: only resuming a run needs it. Otherwise its presence and step
  // are noted (ModelFile::has_training_state) and its segments' places checked, nothing more.
  bool training_state = false;
};
// The process-wide default of OpenOptions::verify_checksums: true unless the environment sets
// BERTRT_VERIFY_CHECKSUMS=0 or set_default_verify_checksums(false) was called (the CLI's
// --no-verify-checksums).
bool default_verify_checksums();
void set_default_verify_checksums(bool verify);

// A memory-mapped model file; tensors' data point into the mapping and stay valid while the
// ModelFile lives (moving it keeps them valid), or while a holder of mapping() does. The mapping
// is copy-on-write where the system allows (core/mapped_file.h): a model can use its fp32
// parameters in place and still train them (io/model_io.cpp); the file itself never changes.
class ModelFile {
 public:
  // Verifies size, identifier "BRT1", format version, the FlatBuffer (flatbuffers::Verifier),
  // every segment (64-byte aligned, inside the file, after the FlatBuffer, nbytes == numel *
  // itemsize, its CRC-32C when stored and options.verify_checksums), dtypes, quantization records,
  // config (BertConfig::validate) and a non-empty vocab. Throws bertrt::Error saying what is
  // wrong (a checksum mismatch names the file and the tensor); a truncated or foreign file never
  // crashes.
  //
  // A file that passes its checksums may still be hostile (an attacker recomputes them): the
  // loader's cost is bounded by the file (segments disjoint, in bounds, every data byte in at
  // most one segment or in zero alignment padding; counts and string lengths bounded before
  // anything is decoded, the decoded header at most kHeaderExpansion times its bytes; duplicates
  // found by hashing) and the values are checked once, in the checksum pass: float tensors
  // (f32/f16/bf16) finite, quantization scales finite, positive and bounded, zero points in the
  // dtype's range, config floats in range, labels without control characters. Errors name the
  // file, the tensor or field and the rule.
  static ModelFile open(const std::string& path);
  static ModelFile open(const std::string& path, const OpenOptions& options);

  const ModelContents& contents() const { return contents_; }
  const std::string& path() const { return file_->path(); }
  // The mapping, shared: whoever holds it keeps every tensor's bytes valid.
  const std::shared_ptr<const MappedFile>& mapping() const { return file_; }
  const TensorRecord* find(const std::string& name) const;  // nullptr if absent
  const TensorRecord& at(const std::string& name) const;    // throws naming file + tensor
  // Segments (weights and optimizer moments) that carry a checksum, of all segments.
  size_t checksummed_segments() const;
  size_t segments() const;
  bool checksums_verified() const { return checksums_verified_; }
  // The file holds a training state (decoded into contents().training_state only when
  // OpenOptions::training_state asked for it).
  bool has_training_state() const { return has_training_state_; }
  // The header (config, vocabulary, heads, metadata) carries its own checksum (schema
  // Model.buffer_crc32c; files written before it have none).
  bool header_checksummed() const { return buffer_checksummed_; }
  // Gives back the mapping's pages of the optimizer moments (MappedFile::release_pages) once they
  // were copied (restore_training_state): a model using its parameters in place keeps the mapping
  // alive, and these pages would stay resident with it. Reading them again maps them again.
  void release_optimizer_pages() const;

 private:
  static ModelFile open_file(const std::string& path, const OpenOptions& options);

  std::shared_ptr<const MappedFile> file_;
  ModelContents contents_;
  std::unordered_map<std::string, size_t> index_;
  bool checksums_verified_ = false;
  bool buffer_checksummed_ = false;
  bool has_training_state_ = false;
};

// Bounds the loader applies to a model file's header before decoding it (ModelFile::open).
struct ModelFileLimits {
  static constexpr size_t kMaxNameBytes = 1024;            // a tensor name, token, label, key
  static constexpr size_t kMaxValueBytes = size_t(1) << 20;  // a metadata value
  static constexpr size_t kMaxMetadata = 4096;               // metadata pairs
  static constexpr size_t kMaxLabels = 100000;               // as bertrt-convert's num_labels
  static constexpr size_t kMaxRank = 8;                      // dimensions of a tensor
  static constexpr size_t kMaxHyper = 1024;                  // training_state hyper/schedule pairs
  static constexpr size_t kMaxDenseModules = 64;             // heads.embedding.dense
  // The decoded header (strings, vectors, records with their bookkeeping) is at most this many
  // times the FlatBuffer's size: an honest file stores every string once, a hostile one points
  // many entries at one string.
  static constexpr uint64_t kHeaderExpansion = 8;
};

// f32/f16/bf16 -> f32; i8/i32 with scales -> dequantized f32 (per tensor or per `axis`).
// Throws bertrt::Error for an integer tensor without scales.
std::vector<float> tensor_to_f32(const TensorRecord& t);
// The same into out[0, t.numel()).
void tensor_to_f32(const TensorRecord& t, float* out);

// Throws bertrt::Error (prefixed by `where`) when `t` is inconsistent: negative dimension, nbytes
// != numel * itemsize, scales/zero_points that do not fit the shape and axis or on a float dtype,
// scales that are not finite, positive and at most kMaxScale(dtype), zero points outside the
// dtype's range.
void validate_tensor_record(const TensorRecord& t, const std::string& where);
// The largest quantization scale of an integer dtype whose dequantized values, (q - zero_point) *
// scale with both in the dtype's range, stay finite floats: FLT_MAX / (qmax - qmin).
float max_quant_scale(DType dtype);

// Checks that the n bytes at p, a tensor's segment of `dtype`, hold finite values (f32, f16, bf16;
// integer dtypes have no non-finite values) and, when crc is given, continues *crc over them: one
// pass, in cache-sized blocks. Returns the index of the first non-finite element, or -1.
int64_t scan_segment(const uint8_t* p, size_t n, DType dtype, uint32_t* crc);

}  // namespace bertrt
