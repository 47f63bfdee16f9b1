// SQuAD v1.1 JSON: structure, fields, answer_start in code points checked against the context,
// then article selection.
#include "fuzz_target.h"
#include "tasks/squad.h"

BERTRT_FUZZ_TARGET(squad_json) {
  bertrt::fuzz::MemFile file(data, size);
  const bertrt::SquadDataset d = bertrt::read_squad(file.path());
  (void)bertrt::select_articles(d, 0, d.titles.size() > 1 ? d.titles.size() / 2 : 1);
}
