#include "io/model_io.h"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

#include "core/error.h"
#include "io/config_check.h"
#include "io/quant_io.h"

namespace bertrt {

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

LoadedModel load_model(const std::string& path) {
  LoadedModel m{nullptr, nullptr, {}, std::nullopt, ModelFile::open(path)};
  const ModelContents& c = m.file.contents();
  // vocab_size may exceed the vocab (padded embeddings, as some released models do), never the
  // other way round: an id without an embedding row would index out of bounds.
  if (int(c.tokenizer.vocab.size()) > c.config.vocab_size)
    fail("{}: tokenizer vocab has {} tokens but config.vocab_size is only {}", path,
         c.tokenizer.vocab.size(), c.config.vocab_size);
  // The model below allocates what the config says: first make sure the file's tensors back it.
  TensorsPresent present;
  uint64_t values = 0;
  for (const TensorRecord& t : c.tensors) values += static_cast<uint64_t>(t.numel());  // verified sizes
  present.count = c.tensors.size();
  present.shape_of = [&](const std::string& name) -> const std::vector<int64_t>* {
    const TensorRecord* t = m.file.find(name);
    return t ? &t->shape : nullptr;
  };
  check_config_against_tensors(c.config, present, path);
  check_config_against_values(c.config, values, path);
  m.model = std::make_unique<BertModel>(c.config, c.heads);
  for (const ParamInfo& p : m.model->layout().params()) {
    const TensorRecord* t = m.file.find(p.name);
    if (!t) fail("{}: tensor '{}' is missing (the config and heads need it)", path, p.name);
    if (t->shape != p.shape)
      fail("{}: tensor '{}' has shape [{}], expected [{}]", path, p.name,
           fmt::join(t->shape, ", "), fmt::join(p.shape, ", "));
    const std::vector<float> v = tensor_to_f32(*t);
    std::copy(v.begin(), v.end(), m.model->params() + p.offset);
  }
  restore_quantization(*m.model, m.file);  // fake-quant ranges / int8 weights (quant_io.h)
  m.tokenizer = make_tokenizer(c.tokenizer);
  m.metadata = c.metadata;
  m.training_state = c.training_state;
  return m;
}

void save_model(const std::string& path, const BertModel& model, const Tokenizer& tokenizer,
                std::map<std::string, std::string> metadata,
                const std::optional<TrainingState>& training_state) {
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
