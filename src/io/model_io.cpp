#include "io/model_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <new>

#include <fmt/ranges.h>
#include <unistd.h>

#include "core/error.h"
#include "io/config_check.h"
#include "io/quant_io.h"

namespace bertrt {

void release_file_pages_once_copied(const LoadedModel& m) {
  if (!m.model || m.model->params_in_place() || !m.file.mapping()) return;
  const MappedFile& map = *m.file.mapping();
  MappedFile::release_pages(map.data(), map.size());
}

TokenizerSpec tokenizer_spec(const Tokenizer& t) {
  const TokenizerOptions& o = t.options();
  TokenizerSpec s;
  s.vocab = t.vocab().tokens();
  s.do_lower_case = o.do_lower_case;
  s.strip_accents = o.strip_accents;
  s.tokenize_chinese_chars = o.tokenize_chinese_chars;
  s.max_input_chars_per_word = o.max_input_chars_per_word;
  s.unk_token = o.unk_token, s.sep_token = o.sep_token, s.pad_token = o.pad_token;
  s.cls_token = o.cls_token, s.mask_token = o.mask_token;
  return s;
}

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& s) {
  TokenizerOptions o;
  o.do_lower_case = s.do_lower_case;
  o.strip_accents = s.strip_accents;
  o.tokenize_chinese_chars = s.tokenize_chinese_chars;
  o.max_input_chars_per_word = s.max_input_chars_per_word;
  o.unk_token = s.unk_token, o.sep_token = s.sep_token, o.pad_token = s.pad_token;
  o.cls_token = s.cls_token, o.mask_token = s.mask_token;
  return std::make_unique<Tokenizer>(Vocab(s.vocab), o);
}

namespace {

// Where the model's fp32 parameters lie in `file` exactly as its arena lays them out — every
// tensor f32, at its layout offset from the first, the 64-byte alignment gaps zero, the whole
// arena inside the file, the mapping copy-on-write — the writable address of the first; else
// nullptr (older files, f16/bf16 or quantized tensors: the loader copies).
float* params_in_file(const ModelFile& file, const ParamLayout& layout) {
  const MappedFile& map = *file.mapping();
  if (!map.writable_data() || layout.params().empty()) return nullptr;
  const TensorRecord* first = file.find(layout.params().front().name);
  if (!first) return nullptr;
  const uint8_t* base = first->data;
  const size_t at = size_t(base - map.data());
  // The mapping runs to the end of the file's last page, zeros past its end (POSIX mmap): a file
  // that ends with the last tensor, unpadded (older writers), still holds the arena's padding.
  static const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t mapped = (map.size() + page - 1) / page * page;
  if (at % 64 != 0 || layout.total() * sizeof(float) > mapped - at) return nullptr;
  for (const ParamInfo& p : layout.params()) {
    const TensorRecord* t = file.find(p.name);
    if (!t || t->dtype != DType::f32 || t->data != base + p.offset * sizeof(float)) return nullptr;
    const size_t padded = (p.numel + 15) / 16 * 16 * sizeof(float);
    for (size_t i = t->nbytes; i < padded; ++i)
      if (t->data[i] != 0) return nullptr;
  }
  return reinterpret_cast<float*>(map.writable_data() + at);
}

}  // namespace

namespace {

std::string file_size_text(const std::string& path) {
  std::error_code ec;
  const uintmax_t n = std::filesystem::file_size(path, ec);
  return ec ? std::string("of unknown size") : fmt::format("{:.1f} MB", double(n) / 1e6);
}

LoadedModel load(const std::string& path, const LoadOptions& options) {
  OpenOptions open;
  open.verify_checksums = default_verify_checksums();
  open.training_state = options.training_state;
  LoadedModel m{nullptr, nullptr, {}, std::nullopt, ModelFile::open(path, open)};
  const ModelContents& c = m.file.contents();
  if (c.metadata.count("adapter_config"))  // io/adapter_io.h kAdapterConfigKey
    fail("{}: a LoRA adapter, not a model: pass it as --adapter {} beside its base model (--model)",
         path, path);
  // The model below allocates what the config says: first make sure the file's tensors back it.
  check_model_file(m.file);
  m.model = std::make_unique<BertModel>(c.config, c.heads);  // zeros that take no memory yet
  m.model->set_source(path);
  const ParamLayout& layout = m.model->layout();
  // Memory (docs/explanation/performance.md, "Memory and cold start"): fp32 parameters are used in
  // place from the copy-on-write mapping when the file lays them out as the arena does (bertrt's
  // writer does); otherwise copied, and the copied pages of the mapping given back. An int8 model
  // gets no fp32 copy of the weights it runs in int8 (their integers are used in place,
  // quant_io.cpp).
  const std::vector<std::string> int8_only = int8_weight_names(m.file, c.config, c.heads);
  if (float* in_file = int8_only.empty() ? params_in_file(m.file, layout) : nullptr) {
    m.model->use_params_in_place(in_file, m.file.mapping());
  } else {
    float* params = m.model->params();
    for (const ParamInfo& p : layout.params()) {
      const TensorRecord& t = *m.file.find(p.name);
      if (t.dtype == DType::i8 &&
          std::find(int8_only.begin(), int8_only.end(), p.name) != int8_only.end())
        continue;
      tensor_to_f32(t, params + p.offset);
      MappedFile::release_pages(t.data, t.nbytes);
    }
  }
  restore_quantization(*m.model, m.file);  // fake-quant ranges / int8 weights (quant_io.h)
  if (!int8_only.empty()) {
    std::vector<std::string> skipped;
    for (const std::string& n : int8_only)
      if (m.file.find(n)->dtype == DType::i8) skipped.push_back(n);
    m.model->set_int8_only(std::move(skipped));
  }
  m.tokenizer = make_tokenizer(c.tokenizer);
  m.metadata = c.metadata;
  m.training_state = c.training_state;
  return m;
}

}  // namespace

LoadedModel load_model(const std::string& path, const LoadOptions& options) {
  try {
    return load(path, options);
  } catch (const std::bad_alloc&) {
    // The file's tensors back its config (check_model_file), so this is the model's own size.
    fail("{}: out of memory while loading the model: it needs more memory than this device has "
         "free (the file is {}; a smaller model, or one quantized to int8, may fit)",
         path, file_size_text(path));
  }
}

void save_model(const std::string& path, const BertModel& model, const Tokenizer& tokenizer,
                std::map<std::string, std::string> metadata,
                const std::optional<TrainingState>& training_state) {
  if (model.adapter())
    fail("{}: the model runs the adapter {} over its base: write the adapter with save_adapter, "
         "or merge it (bertrt merge) for a plain model",
         path, model.adapter()->source);
  ModelContents c;
  c.config = model.config();
  c.heads = model.heads();
  c.tokenizer = tokenizer_spec(tokenizer);
  for (const ParamInfo& p : model.layout().params()) {
    const float* x = model.params() + p.offset;
    for (size_t i = 0; i < p.numel; ++i)
      if (!std::isfinite(x[i]))
        fail("{}: refusing to write non-finite weights ({}[{}] = {}); the run diverged — lower "
             "--learning-rate", path, p.name, i, x[i]);
    TensorRecord t;
    t.name = p.name;
    t.shape = p.shape;
    t.dtype = DType::f32;
    t.data = reinterpret_cast<const uint8_t*>(model.params() + p.offset);
    t.nbytes = p.numel * sizeof(float);
    c.tensors.push_back(std::move(t));
  }
  c.training_state = training_state;
  c.metadata = std::move(metadata);
  std::deque<std::array<float, 2>> ranges;
  append_quantization(model, c, ranges);  // observer ranges, int8 weights (quant_io.h)
  write_model_file(path, c);
}

}  // namespace bertrt
