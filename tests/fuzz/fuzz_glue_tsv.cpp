// Task TSVs: the GLUE presets (the first byte picks sst2/cola/mrpc/stsb/rte/qnli) and a generic
// TSV task resolved against the file's header (--text-column/--label-column by name and index).
#include "fuzz_target.h"
#include "tasks/tsv_task.h"

BERTRT_FUZZ_TARGET(glue_tsv) {
  if (size == 0) return;
  const std::vector<std::string> names = bertrt::glue_task_names();
  const std::string& task = names[data[0] % names.size()];
  bertrt::fuzz::MemFile file(data + 1, size - 1);
  try {
    (void)bertrt::read_glue_tsv(file.path(), bertrt::glue_task(task));
  } catch (const bertrt::Error&) {
  }
  bertrt::GenericTsvOptions o;
  o.text_column = data[0] & 1 ? "sentence" : "0";
  o.text_pair_column = data[0] & 2 ? "1" : "";
  o.label_column = data[0] & 4 ? "label" : "2";
  if (data[0] & 8)
    o.regression = true;
  else
    o.labels = {"0", "1", "entailment"};
  o.has_header = !(data[0] & 16);
  const bertrt::TaskSpec spec = bertrt::generic_tsv_task(o, file.path());
  (void)bertrt::read_glue_tsv(file.path(), spec);
}
