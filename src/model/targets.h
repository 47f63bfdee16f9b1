// The heads' targets of one batch (host pointers when handed to BertModel::forward).
#pragma once

#include <cstdint>

namespace bertrt {

// Labels for the heads that should compute a loss; nullptr entries are skipped (that head then
// produces its logits only). Which fine-tuning field is read depends on heads().kind.
struct Targets {
  const int32_t* mlm_positions = nullptr;  // [P] flat indices b·T + t
  const int32_t* mlm_labels = nullptr;     // [P] original token ids (< 0 ignored)
  int num_masked = 0;                      // P
  const int32_t* nsp_labels = nullptr;     // [B] 0 = real next sentence, 1 = random
  const int32_t* labels = nullptr;         // [B] sequence classification, in [0, K) (< 0 ignored)
  const float* scores = nullptr;           // [B] regression targets (e.g. STS-B similarity)
  const int32_t* token_labels = nullptr;   // [B·T] token classification, −100 (any < 0) ignored
  const int32_t* start_positions = nullptr;  // [B] question answering: token index of the
  const int32_t* end_positions = nullptr;    // [B] answer's first / last piece (see span_head.h)
};

}  // namespace bertrt
