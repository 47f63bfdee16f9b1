#include "model/lora_int8.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "model/bert_model.h"
#include "quant/quant_linear.h"

namespace bertrt {

void int8_linear_backward(Backend& be, QuantLinear& q, float* dinp, float* dweight, float* dbias,
                          const float* dout, int rows, int in_f, int out_f, int ldd) {
  if (q.mode != QuantMode::kInt8)
    fail("int8 Linear backward on a {} Linear", quant_mode_name(q.mode));
  if (dweight || dbias)
    fail("backward through an int8 Linear: its weight and bias are frozen (only adapters over an "
         "int8 base train); no gradient of them can be computed");
  if (q.w8.rows != out_f || q.w8.cols != in_f)
    fail("int8 Linear backward: weight is [{}, {}], the call needs [{}, {}]", q.w8.rows, q.w8.cols,
         out_f, in_f);
  if (!dinp || rows == 0) return;
  if (ldd == 0) ldd = in_f;
  if (!q.backward) fail("int8 Linear backward: no scratch bound (QuantLinear::backward)");
  Int8BackwardScratch& s = *q.backward;
  const size_t n = size_t(out_f) * in_f;
  float* w = s.weight.ensure(be, n);
  if (s.row_ids < out_f || s.ids_on != &be) {
    std::vector<int32_t> ids(static_cast<size_t>(out_f));
    std::iota(ids.begin(), ids.end(), 0);
    be.upload(s.rows.ensure(be, ids.size()), ids.data(), ids.size() * sizeof(int32_t));
    s.row_ids = out_f, s.ids_on = &be;
  }
  // dequant(W) = 0 + scale[o] · float(q[o, i]): the int8 lookup of every row, exact.
  const Int8WeightView v = q.dev8.on(be, q.w8);
  be.fill(w, 0.0f, n);
  be.embedding_forward_s8(w, s.rows.data(), v.q, v.scale, out_f, in_f, out_f);
  // Where the backend runs its own packed copy of the integers (Int8WeightMirror), those in the
  // file's mapping were given back after packing and reading them here mapped them in again:
  // give them back again, so the base stays resident once (they return from the page cache).
  if (q.w8.q_in_file && v.packed && be.accepts_host_pointers())
    MappedFile::release_pages(q.w8.q, n);
  be.gemm(false, false, rows, in_f, out_f, 1.0f, dout, out_f, w, in_f, 1.0f, dinp, ldd);
}

}  // namespace bertrt

// BertModel's part (bert_model.h): the task head of a model whose base is int8 and frozen.
namespace bertrt {

void BertModel::float_task_head() {
  if (!quant_) return;
  for (const char* name : {"classifier", "qa_outputs"}) {
    const auto it = quant_->linears().find(name);
    if (it == quant_->linears().end()) continue;
    QuantLinear& q = it->second;
    const std::string weight = std::string(name) + ".weight";
    if (q.mode == QuantMode::kInt8 && !holds_fp32(weight)) {
      // The fp32 values the int8 weight stands for, as disable_quantization restores them.
      float* w = params_.host() + layout_.at(weight).offset;
      for (int r = 0; r < q.w8.rows; ++r)
        for (int c = 0; c < q.w8.cols; ++c) {
          const size_t i = size_t(r) * q.w8.cols + c;
          w[i] = float(q.w8.q[i]) * q.w8.scale[r];
        }
      int8_only_.erase(std::find(int8_only_.begin(), int8_only_.end(), weight));
    }
    q.mode = QuantMode::kFloat;
    q.own8 = Int8Weight{};
    q.w8 = Int8WeightView{};
    q.dev8 = Int8WeightMirror{};
  }
}

}  // namespace bertrt

namespace bertrt {

void BertModel::set_heads_over_int8(const HeadsConfig& new_heads, uint64_t seed) {
  if (quant_mode() != QuantMode::kInt8)
    fail("set_heads_over_int8 on a {} model", quant_mode_name(quant_mode()));
  new_heads.validate();
  if (new_heads.mlm || new_heads.nsp || new_heads.embedding ||
      new_heads.resolved_kind() == HeadKind::kNone)
    fail("{}over an int8 base, LoRA adapters train a task head (sequence or token "
         "classification, regression, question answering), not pre-training or embedding heads",
         source_.empty() ? "" : source_ + ": ");
  float_task_head();  // a kept head keeps its (dequantized) values
  relayout(new_heads, seed);
  float_task_head();  // a new one starts fp32
}

}  // namespace bertrt
