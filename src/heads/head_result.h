// What a head's forward reports besides its outputs: the loss and the counts an evaluation needs
// to average it over batches (loss · count summed, divided by Σ count).
#pragma once

namespace bertrt {

struct HeadResult {
  double loss = 0;  // the head's loss as Hugging Face computes it (0 without targets)
  int count = 0;    // rows that entered the loss (labels ≥ 0; examples for regression / spans)
  int correct = 0;  // argmax == label (classification), both ends exact (spans); 0 for regression
};

}  // namespace bertrt
