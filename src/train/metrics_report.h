// A task's metrics as eval --json and finetune's --metrics log write them, and as one line of
// text. Keys follow Hugging Face evaluate / run_glue.py (matthews_correlation, spearmanr,
// combined_score, seqeval's overall_* and per-type objects, exact_match / f1).
//
// Deprecated: the names bertrt used before are written too, for one release, beside the new ones
// (JSON only): matthews (= matthews_correlation), spearman (= spearmanr), and for CoNLL f1 /
// precision / recall (= overall_f1 / overall_precision / overall_recall).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "train/task_data.h"

namespace bertrt {

// (new name, deprecated alias) pairs, in the order above.
const std::vector<std::pair<std::string, std::string>>& deprecated_metric_aliases();

// {metric: value, ..., "<type>": {"precision", "recall", "f1", "number"}, ..., alias: value}.
// NaN values (an undefined correlation) become null, as nlohmann writes them.
nlohmann::json metrics_json(const TaskMetrics& m);

// "matthews_correlation 0.4312" / "overall_precision 0.9012, ...; LOC f1 0.9321 (1837), ...".
std::string metrics_text(const TaskMetrics& m);

}  // namespace bertrt
