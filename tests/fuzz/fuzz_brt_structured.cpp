// The .brt loader against files whose checksums are right: a custom mutator (libFuzzer's
// LLVMFuzzerCustomMutator) takes the file apart, edits its FlatBuffer's fields (counts, offsets,
// shapes, dtypes, strings, shared strings, labels, the embedding head, task records, config
// numbers, the training state) or its tensor bytes, and recomputes every checksum
// (tests/hostile/brt_mutate.h), as an attacker would. The loader runs as the commands do,
// checksums required: ModelFile::open, check_model_file (what load_model checks before it
// allocates), check_task_record. A file it accepts must keep the loader's promises, checked here —
// a broken one aborts (a finding): finite values, disjoint segments, a decoded header bounded by
// the file's size.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "fuzz_target.h"
#include "io/config_check.h"
#include "io/model_file.h"
#include "tasks/task_definition.h"

#ifdef BERTRT_LIBFUZZER
#include <random>

#include "brt_mutate.h"
#endif

namespace {

[[noreturn]] void broken(const char* promise) {
  std::fprintf(stderr, "fuzz_brt_structured: the loader accepted a file that breaks: %s\n", promise);
  std::abort();
}

void check_promises(const bertrt::ModelFile& f, size_t file_size) {
  const bertrt::ModelContents& c = f.contents();
  std::vector<const bertrt::TensorRecord*> all;
  for (const bertrt::TensorRecord& t : c.tensors) all.push_back(&t);
  if (c.training_state)
    for (const bertrt::TensorRecord& t : c.training_state->optimizer_tensors) all.push_back(&t);
  for (const bertrt::TensorRecord* t : all) {
    if (t->nbytes > file_size) broken("a segment larger than the file");
    if ((t->dtype == bertrt::DType::i8 || t->dtype == bertrt::DType::i32) && t->scales.empty()) continue;
    for (float x : bertrt::tensor_to_f32(*t))
      if (!std::isfinite(x)) broken("every value finite");
  }
  std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) { return a->data < b->data; });
  for (size_t i = 1; i < all.size(); ++i)
    if (all[i - 1]->nbytes && all[i]->nbytes && all[i - 1]->data + all[i - 1]->nbytes > all[i]->data)
      broken("segments disjoint");
  uint64_t decoded = 0;
  for (const std::string& s : c.tokenizer.vocab) decoded += s.size();
  for (const std::string& s : c.heads.labels) decoded += s.size();
  for (const auto& [k, v] : c.metadata) decoded += k.size() + v.size();
  if (c.heads.embedding)
    for (const auto& [name, text] : c.heads.embedding->prompts) decoded += name.size() + text.size();
  if (decoded > bertrt::ModelFileLimits::kHeaderExpansion * file_size + (1u << 20))
    broken("the decoded header bounded by the file");
}

}  // namespace

BERTRT_FUZZ_TARGET(brt_structured) {
  bertrt::fuzz::MemFile file(data, size);
  bertrt::OpenOptions options;  // checksums required, as the commands open files
  options.training_state = size % 2 == 0;
  const bertrt::ModelFile m = bertrt::ModelFile::open(file.path(), options);
  check_promises(m, size);
  bertrt::check_model_file(m);
  const bertrt::ModelContents& c = m.contents();
  bertrt::check_task_record(c.metadata, c.heads, c.config, file.path());
}

#ifdef BERTRT_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

// One structured edit (15 of 16 times) or libFuzzer's byte-level mutation, then the file put back
// together with its checksums recomputed; an edit that outgrows max_size leaves the input as is.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  using namespace bertrt::hostile;
  std::minstd_rand rng(seed);
  std::optional<BrtParts> parts = take_apart(std::string(reinterpret_cast<char*>(data), size));
  PackOptions options;
  if (!parts || rng() % 16 == 0) {
    size = LLVMFuzzerMutate(data, size, max_size);
    parts = take_apart(std::string(reinterpret_cast<char*>(data), size));
    if (!parts) return size;
  } else {
    mutate(*parts, options, rng);
  }
  const std::string out = put_together(*parts, options);
  if (out.size() > max_size) return size;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
#endif
