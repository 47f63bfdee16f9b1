// Between a BertModel + Tokenizer in memory and a .brt model file (io/model_file.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "io/model_file.h"
#include "model/bert_model.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {

struct LoadedModel {
  std::unique_ptr<BertModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::map<std::string, std::string> metadata;
  std::optional<TrainingState> training_state;  // moments point into `file`
  ModelFile file;                               // keeps the mapping alive
};

// Opens and verifies `path`, then copies every parameter of the config's layout into the model
// (f16/bf16/i8 are widened to f32). A quantized file (io/quant_io.h) comes back in its mode:
// fake-quant with its frozen ranges, or int8 running the int8 kernels. Throws bertrt::Error naming the file and the tensor when one
// is missing or has the wrong shape.
LoadedModel load_model(const std::string& path);

TokenizerSpec tokenizer_spec(const Tokenizer& tokenizer);
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& spec);

// Writes the model atomically (a failed write leaves an existing file untouched); a quantized
// model with its ranges, an int8 one with i8 weights (io/quant_io.h).
void save_model(const std::string& path, const BertModel& model, const Tokenizer& tokenizer,
                std::map<std::string, std::string> metadata,
                const std::optional<TrainingState>& training_state = std::nullopt);

}  // namespace bertrt
