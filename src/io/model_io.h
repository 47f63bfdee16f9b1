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

struct LoadOptions {
  // Decode the file's training state into LoadedModel::training_state (resuming a run); other
  // commands leave it unread (OpenOptions::training_state).
  bool training_state = false;
};

// Opens and verifies `path` (ModelFile::open, then check_model_file), then copies every parameter of the config's layout into the model
// (f16/bf16/i8 are widened to f32). A quantized file (io/quant_io.h) comes back in its mode:
// fake-quant with its frozen ranges, or int8 running the int8 kernels. Throws bertrt::Error naming the file and the tensor when one
// is missing or has the wrong shape. Running out of memory while building the model is reported
// as an error naming the file and the memory its config asks for.
LoadedModel load_model(const std::string& path, const LoadOptions& options = {});

// After the model stopped using its parameters in place (BertModel::set_heads copies them into
// its own arena, as fine-tuning does), gives back the pages of m's file mapping: they would stay
// resident beside the copy for the whole run (a base model's 420 MB). Nothing is lost: the
// mapping was only read, and a later read of a record maps its pages again from the file. Does
// nothing while the model still uses the mapping.
void release_file_pages_once_copied(const LoadedModel& m);

TokenizerSpec tokenizer_spec(const Tokenizer& tokenizer);
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& spec);

// Writes the model atomically (a failed write leaves an existing file untouched); a quantized
// model with its ranges, an int8 one with i8 weights (io/quant_io.h).
void save_model(const std::string& path, const BertModel& model, const Tokenizer& tokenizer,
                std::map<std::string, std::string> metadata,
                const std::optional<TrainingState>& training_state = std::nullopt);

}  // namespace bertrt
