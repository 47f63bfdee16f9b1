// Quantization parameters: the integer ranges bertrt uses and how a scale and zero point follow
// from a range, exactly as PyTorch computes them (torch/ao/quantization/observer.py,
// UniformQuantizationObserverBase._calculate_qparams, float32 arithmetic, eps = FLT_EPSILON).
//
// Choices (README "Quantization"; sources in brackets):
//   - Activations (the input of every Linear): per-tensor ASYMMETRIC uint8 [0, 255] with a zero
//     point. The inputs of BERT's Linears are not centred: after LayerNorm the range is shifted by
//     the bias β, and the second FFN Linear reads GELU outputs, which are ≥ −0.17; a symmetric int8
//     grid would spend about half its 256 codes on values that never occur. [torch qnnpack QAT
//     qconfig: quint8, quant_min 0, quant_max 255, reduce_range False. FBGEMM's default narrows to
//     [0, 127] (reduce_range) only because of the vpmaddubsw saturation our kernel avoids.]
//   - Weights (and int8 embedding rows): per-output-channel SYMMETRIC int8 [−127, 127], zero
//     point 0, scale = max|w| / 127. The range is symmetric so ±max|w| both map to codes and −w
//     quantizes to −q; −128 is never produced. [torch.ao.quantization.fake_quantize
//     fused_per_channel_wt_fake_quant_range_neg_127_to_127; the default
//     default_per_channel_weight_fake_quant uses [−128, 127], i.e. scale = max|w| / 127.5, which
//     is not the scale the issue asks for.]
#pragma once

namespace bertrt {

constexpr int kActQMin = 0;
constexpr int kActQMax = 255;
constexpr int kWeightQMin = -127;
constexpr int kWeightQMax = 127;

struct QParams {
  float scale = 1.0f;  // torch FakeQuantize's initial buffers: scale 1, zero point 0
  int zero_point = 0;
};

// per_tensor_affine: min_neg = min(min_val, 0), max_pos = max(max_val, 0) (0 is always exactly
// representable), scale = max((max_pos − min_neg) / (qmax − qmin), eps),
// zero_point = clamp(qmin − round_half_even(min_neg / scale), qmin, qmax).
// Throws bertrt::Error when min_val > max_val or either is not finite.
QParams affine_qparams(float min_val, float max_val, int qmin = kActQMin, int qmax = kActQMax);

// per_channel_symmetric: scale = max(absmax / ((qmax − qmin) / 2), eps); with [−127, 127] that is
// absmax / 127. A row of zeros gets eps (its codes are all 0, so it dequantizes to zeros).
float symmetric_scale(float absmax, int qmin = kWeightQMin, int qmax = kWeightQMax);

}  // namespace bertrt
