#include "heads/head_result.h"

namespace bertrt {

int count_labels(const int32_t* labels, int rows) {
  int n = 0;
  for (int i = 0; i < rows; ++i) n += labels[i] >= 0;
  return n;
}

HeadResult classification_result(const int32_t* labels, const int32_t* argmax, int rows,
                                 double loss_sum) {
  HeadResult r;
  for (int i = 0; i < rows; ++i) {
    if (labels[i] < 0) continue;
    ++r.count;
    r.correct += argmax[i] == labels[i];
  }
  r.loss = r.count ? loss_sum / r.count : 0.0;
  return r;
}

}  // namespace bertrt
