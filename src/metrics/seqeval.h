// Entity-level precision / recall / F1 over IOB tag sequences with seqeval's default semantics
// (seqeval 1.x metrics/sequence_labeling.py: get_entities, end_of_chunk, start_of_chunk, f1_score;
// the CoNLL-2003 metric of conlleval). An entity is (type, first word, last word); micro scores
// count entities matched exactly (type and both ends) over all sentences.
//
// Lenient chunking as seqeval's default mode (not mode="strict"): an I-X after O, or after a tag of
// another type, STARTS a new X entity (so O I-PER I-PER is one PER entity); a type change ends
// the current entity. E- and S- tags (IOBES) are read as seqeval reads them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bertrt {

struct Entity {
  std::string type;  // "PER"
  int64_t first = 0, last = 0;  // word positions, inclusive, within the sentence
  bool operator==(const Entity& o) const {
    return first == o.first && last == o.last && type == o.type;
  }
};

// Entities of one sentence's tags ("O", "B-PER", "I-PER", ...). A tag that is neither "O" nor
// starts with "B-", "I-", "E-", "S-" (or is exactly B/I/E/S) throws bertrt::Error naming it and
// its position, as seqeval raises ValueError.
std::vector<Entity> iob_entities(const std::vector<std::string>& tags);

struct EntityScores {
  double precision = 0, recall = 0, f1 = 0;  // fractions; 0 when undefined (seqeval)
  int64_t correct = 0, predicted = 0, gold = 0;  // entity counts
};

// Micro-averaged entity scores (seqeval f1_score / precision_score / recall_score with their
// defaults). gold[i] and predicted[i] are the tags of sentence i and must have equal lengths;
// throws bertrt::Error naming the sentence otherwise.
EntityScores entity_scores(const std::vector<std::vector<std::string>>& gold,
                           const std::vector<std::vector<std::string>>& predicted);

// What Hugging Face evaluate's "seqeval" metric returns (classification_report + accuracy_score):
// the micro scores (overall_precision / overall_recall / overall_f1), the tag accuracy over all
// words (overall_accuracy: seqeval accuracy_score, "O" included), and per entity type, sorted by
// name over the types found in gold or predictions, {precision, recall, f1, number} with number
// = the gold entities of that type (support). Same inputs and errors as entity_scores.
struct SeqevalReport {
  EntityScores overall;
  double accuracy = 0;
  std::vector<std::pair<std::string, EntityScores>> per_type;
};
SeqevalReport seqeval_report(const std::vector<std::vector<std::string>>& gold,
                             const std::vector<std::vector<std::string>>& predicted);

}  // namespace bertrt
