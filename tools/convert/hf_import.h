// A Hugging Face BERT folder (config.json, weights, vocab.txt, tokenizer_config.json) → the
// contents of a .brt model file.
//
// Decisions (see /work/notes/readme-hfconvert.md and the quirks in hf_names.h):
// - Tensors bertrt does not know (for the config's architecture) are an error naming them;
//   ConvertOptions::drop_unknown drops them with a warning instead.
// - A missing pooler (BertForMaskedLM, BertForTokenClassification, BertForQuestionAnswering and
//   sentence-transformers exports are saved without one) is initialised as transformers does when
//   it loads such a file into a model with a pooler (_init_weights: weight ~ N(0, initializer_range²),
//   bias 0), from a fixed seed so conversions are reproducible; a warning says so and metadata
//   "converter.initialized" lists the tensors. Any other missing tensor is an error.
// - A vocab longer than vocab_size (ids without an embedding row, a real transformers 4.8 file has
//   this) is cut to vocab_size with a warning; a shorter one is kept (padded embeddings are legal).
#pragma once

#include <string>

#include "convert/convert_input.h"
#include "convert/converted_model.h"

namespace bertrt::convert {

// Throws bertrt::Error naming the file and the tensor or field for anything inconsistent: a
// tensor whose shape does not match config.json, a decoder weight that differs from the word
// embeddings, a missing vocab.txt (unless opts.vocab), an unsupported architecture.
ConvertedModel import_hf(const InputPaths& in, const ConvertOptions& opts);

// An original TF1 BERT checkpoint (bert_config.json, bert_model.ckpt.*, vocab.txt; names mapped by
// tf_bert_names.h, kernels transposed, optimizer slots skipped, hidden_act gelu_new). The folder
// may hold a tokenizer_config.json; without one do_lower_case is true (with a warning).
ConvertedModel import_tf1(const InputPaths& in, const ConvertOptions& opts);

// Dispatch: a sentence-transformers folder (modules.json, st_import.h), else on find_input(path):
// Hugging Face folder/file or TF1 checkpoint.
ConvertedModel import_checkpoint(const std::string& path, const ConvertOptions& opts);

}  // namespace bertrt::convert
