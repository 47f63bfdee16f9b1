// CoNLL-2003 NER files: 4 columns, -DOCSTART- lines, blank-line sentence breaks, IOB1 → IOB2.
#include "fuzz_target.h"
#include "tasks/conll.h"

BERTRT_FUZZ_TARGET(conll) {
  bertrt::fuzz::MemFile file(data, size);
  bertrt::ConllStats stats;
  (void)bertrt::read_conll(file.path(), bertrt::conll2003_labels(), &stats);
}
