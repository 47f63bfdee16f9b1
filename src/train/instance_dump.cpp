#include "train/instance_dump.h"

#include "core/error.h"

namespace bertrt {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the dump format is little-endian; a big-endian host needs byte swaps here");

void put(AtomicFile& f, int32_t v) { f.write(&v, sizeof v); }

void put(AtomicFile& f, const std::vector<int32_t>& v) {
  f.write(v.data(), v.size() * sizeof(int32_t));
}

}  // namespace

InstanceDump::InstanceDump(const std::string& path, int seq_len, int micro_batch_size,
                           int accumulation)
    : path_(path), seq_len_(seq_len), micro_batch_size_(micro_batch_size), file_(path) {
  file_.write("BRTINST1", 8);
  for (int32_t v : {1, seq_len, micro_batch_size, accumulation}) put(file_, v);
}

void InstanceDump::write(int64_t step, int micro, const Batch& b) {
  if (b.seq_len != seq_len_ || b.batch_size != micro_batch_size_)
    fail("{}: a batch of {} × {} does not fit the dump's {} × {}", path_, b.batch_size, b.seq_len,
         micro_batch_size_, seq_len_);
  file_.write(&step, sizeof step);
  put(file_, micro);
  put(file_, b.batch_size);
  put(file_, int32_t(b.masked_lm_positions.size()));
  put(file_, b.input_ids);
  put(file_, b.token_type_ids);
  put(file_, b.attention_mask);
  put(file_, b.masked_lm_positions);
  put(file_, b.masked_lm_ids);
  put(file_, b.next_sentence_labels);
}

}  // namespace bertrt
