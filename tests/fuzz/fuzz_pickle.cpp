// The restricted unpickler alone (protocols 2 and 4, memo, allowlisted globals), from memory: the
// input is one pickle starting at byte 0.
#include "convert/pickle.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(pickle) {
  const auto doc = bertrt::convert::pickle::unpickle(data, size, 0, "fuzz.pkl");
  if (doc.root) (void)doc.root->reduce_callable();
}
