// The exact batches a pre-training run trains on, written to a file (`pretrain --dump-instances`)
// so that another implementation (tests/reference/pretrain_twin.py) can train on the same data.
//
// Format (little-endian, every field int32 unless said), read by
// tests/reference/instance_dump.py with numpy alone:
//   header: 8 bytes "BRTINST1", version (1), seq_len T, micro_batch_size b, accumulation K
//   then one record per micro-batch, in training order (K records per optimizer step):
//     int64 step (1-based), micro (0..K-1), rows (= b), P (masked positions),
//     input_ids[rows*T], token_type_ids[rows*T], attention_mask[rows*T],
//     masked_lm_positions[P] (flat indices r*T + t into this micro-batch),
//     masked_lm_ids[P], next_sentence_labels[rows] (−1: no NSP)
// The file is committed atomically when the run ends; a failed run leaves no partial dump.
#pragma once

#include <cstdint>
#include <string>

#include "core/atomic_file.h"
#include "train/pretraining_data.h"

namespace bertrt {

class InstanceDump {
 public:
  // Throws bertrt::Error naming `path` when its folder is not writable. keep_through_step > 0 (a
  // resumed run): the records of steps ≤ it already in `path` come first, so an interrupted and
  // resumed run's dump equals an uninterrupted one's; a file of another shape is an error.
  InstanceDump(const std::string& path, int seq_len, int micro_batch_size, int accumulation,
               int64_t keep_through_step = 0);
  // Throws bertrt::Error when the batch's shape is not the header's.
  void write(int64_t step, int micro, const Batch& batch);
  void commit() { file_.commit(); }
  // The step of the first record (0 when none yet).
  int64_t first_step() const { return first_step_; }

 private:
  std::string path_;
  int seq_len_, micro_batch_size_;
  int64_t first_step_ = 0;
  AtomicFile file_;
};

}  // namespace bertrt
