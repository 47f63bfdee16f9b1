// The class names a fine-tuned model's predictions print: one rule for `bertrt predict`, the C
// API (bertrt_model_label) and Python (Model.labels, Model.predict).
#pragma once

#include <string>
#include <vector>

namespace bertrt {

// True when `labels` name no classes: each is Hugging Face's default name "LABEL_<i>" (a config
// without id2label) or the bare id "<i>" (a GLUE file's 0/1), i being its position.
bool generic_labels(const std::vector<std::string>& labels);

// The names of a head's classes: `head_labels` when they name the classes (a converted
// classifier's id2label NEGATIVE, POSITIVE; a generic TSV task's --labels; conll2003's tags),
// else the names Hugging Face datasets gives task `task`'s classes (sst2 negative, positive; cola
// unacceptable, acceptable; mrpc not_equivalent, equivalent; rte and qnli entailment,
// not_entailment) when it has as many, else `head_labels` as they are. `task` may be empty or a
// task of no such names (tsv, conll2003, squad).
std::vector<std::string> prediction_labels(const std::vector<std::string>& head_labels,
                                           const std::string& task);

}  // namespace bertrt
