// Model configs: Hugging Face config.json (read_hf_config, with id2label) and Google's
// bert_config.json (read_bert_config_json), both on the same bytes.
#include "convert/hf_config.h"
#include "convert/tf_bert_names.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(config_json) {
  bertrt::fuzz::MemFile file(data, size);
  try {
    (void)bertrt::convert::read_hf_config(file.path());
  } catch (const bertrt::Error&) {
  }
  (void)bertrt::convert::read_bert_config_json(file.path());
}
