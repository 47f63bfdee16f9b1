// The quantization of a BertModel in the model file (README "Quantization-aware training and
// int8", "The model file"):
//
//   - every Linear's input range: tensor "<linear>.input_observer", f32 [2] = (min, max), the
//     observer's running range (the activation scale and zero point follow from it by
//     affine_qparams, quant/qparams.h). <linear> is the Hugging Face module name
//     (bert.encoder.layer.0.attention.self.query, ..., bert.pooler.dense, classifier,
//     cls.predictions.decoder for the tied decoder);
//   - int8 files: every Linear weight as i8 [out, in] with a Quantization record {scales [out],
//     axis 0, no zero points} (symmetric), and with int8 embeddings the three embedding tables the
//     same way, per row; biases, LayerNorm and (with float embeddings) the tables stay f32;
//   - metadata "quantization" = "fake-quant" (fp32 weights + ranges, a QAT model that eval runs
//     with fake-quant) or "int8", "quantization.embeddings" = "int8" | "float",
//     "quantization.observer_momentum", "quantization.observers_frozen" = "true" | "false".
// A reader that ignores these still runs the file: i8 weights dequantize to exactly the
// fake-quant weights (io/model_file.h tensor_to_f32), extra tensors are ignored.
#pragma once

#include <array>
#include <deque>
#include <string>
#include <vector>

#include "io/model_file.h"
#include "model/bert_model.h"

namespace bertrt {

// Adds the quantization of `model` (if any) to `c`, whose tensors are the model's fp32 parameters:
// the observer tensors (their values kept in `storage`, which must outlive the write), the i8
// replacements of an int8 model's weights, and the metadata.
void append_quantization(const BertModel& model, ModelContents& c,
                         std::deque<std::array<float, 2>>& storage);

// The weights restore_quantization takes in int8 from `file` (none unless the file is int8): the
// fp32 parameters an int8 model does not need (io/model_io.cpp leaves them out).
std::vector<std::string> int8_weight_names(const ModelFile& file, const BertConfig& config,
                                           const HeadsConfig& heads);

// Whether `name` is an activation range's tensor ("<linear>.input_observer", above).
bool is_observer_tensor(const std::string& name);

// After the fp32 parameters of `model` were loaded from `file`: restores its quantization from
// the records above (int8 weights are taken from the file's integers, not re-quantized). Throws
// bertrt::Error naming the file and the tensor for a missing or inconsistent record.
void restore_quantization(BertModel& model, const ModelFile& file);

}  // namespace bertrt
