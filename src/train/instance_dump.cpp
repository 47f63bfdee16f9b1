#include "train/instance_dump.h"

#include <cstring>
#include <fstream>
#include <vector>

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
                           int accumulation, int64_t keep_through_step)
    : path_(path), seq_len_(seq_len), micro_batch_size_(micro_batch_size), file_(path) {
  file_.write("BRTINST1", 8);
  const int32_t header[4] = {1, seq_len, micro_batch_size, accumulation};
  for (int32_t v : header) put(file_, v);
  if (keep_through_step <= 0) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // nothing dumped before the interruption
  char magic[8];
  int32_t old[4];
  if (!in.read(magic, 8) || std::memcmp(magic, "BRTINST1", 8) != 0 ||
      !in.read(reinterpret_cast<char*>(old), sizeof old) || std::memcmp(old, header, sizeof old))
    fail(
        "{}: not the dump of this run (another format or batch shape): give --dump-instances "
        "another file",
        path);
  // Records: int64 step, int32 micro, rows, P, then 3·rows·T + 2·P + rows int32 (header comment).
  std::vector<char> rec;
  for (;;) {
    int64_t step;
    int32_t head[3];
    if (!in.read(reinterpret_cast<char*>(&step), sizeof step)) break;
    if (!in.read(reinterpret_cast<char*>(head), sizeof head) || head[1] != micro_batch_size ||
        head[2] < 0)
      fail("{}: a damaged record at step {}: give --dump-instances another file", path, step);
    const size_t n = (3 * size_t(head[1]) * seq_len + 2 * size_t(head[2]) + head[1]) * 4;
    rec.resize(n);
    if (!in.read(rec.data(), std::streamsize(n)))
      fail("{}: a damaged record at step {}: give --dump-instances another file", path, step);
    if (step > keep_through_step) break;  // redone by this run
    if (!first_step_) first_step_ = step;
    file_.write(&step, sizeof step);
    file_.write(head, sizeof head);
    file_.write(rec.data(), n);
  }
}

void InstanceDump::write(int64_t step, int micro, const Batch& b) {
  if (b.seq_len != seq_len_ || b.batch_size != micro_batch_size_)
    fail("{}: a batch of {} × {} does not fit the dump's {} × {}", path_, b.batch_size, b.seq_len,
         micro_batch_size_, seq_len_);
  if (!first_step_) first_step_ = step;
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
