// What a head's forward reports besides its outputs: the loss and the counts an evaluation needs
// to average it over batches (loss · count summed, divided by Σ count).
//
// A head's forward only records backend ops: its loss sum and the argmax of each row land in
// backend memory (HeadReadout), and the host turns them into a HeadResult after the forward's one
// sync, counting against the labels it already holds.
#pragma once

#include <cstdint>

namespace bertrt {

struct HeadResult {
  double loss = 0;  // the head's loss as Hugging Face computes it (0 without targets)
  int count = 0;    // rows that entered the loss (labels ≥ 0; examples for regression / spans)
  int correct = 0;  // argmax == label (classification), both ends exact (spans); 0 for regression
};

// Backend memory a head's forward writes for the host.
struct HeadReadout {
  double* loss = nullptr;     // Σ loss over counted rows (spans: [2], start then end)
  int32_t* argmax = nullptr;  // [rows] the predicted class of each row (spans: [2, B])
};

// Rows with a label ≥ 0 (Hugging Face's ignore_index −100 and every negative label drop out).
int count_labels(const int32_t* labels, int rows);

// The classification result of `rows` rows from host labels, the argmax read back and the loss
// sum: loss = loss_sum / count (0 without counted rows), correct = Σ (argmax == label).
HeadResult classification_result(const int32_t* labels, const int32_t* argmax, int rows,
                                 double loss_sum);

}  // namespace bertrt
