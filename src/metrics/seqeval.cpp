#include "metrics/seqeval.h"

#include <map>
#include <set>
#include <tuple>

#include "core/error.h"

namespace bertrt {
namespace {

// seqeval get_entities: tag = first character, type = what follows "X-" ("_" when none).
void split_tag(const std::string& chunk, size_t position, char& tag, std::string& type) {
  const bool bare = chunk == "O" || chunk == "B" || chunk == "I" || chunk == "E" || chunk == "S";
  const bool prefixed = chunk.size() > 2 && chunk[1] == '-' &&
                        (chunk[0] == 'B' || chunk[0] == 'I' || chunk[0] == 'E' || chunk[0] == 'S');
  if (!bare && !prefixed)
    fail("entity tags: tag '{}' at word {} is not O or B-/I-/E-/S-TYPE", chunk, position);
  tag = chunk[0];
  type = bare ? "_" : chunk.substr(2);
}

bool end_of_chunk(char prev_tag, char tag, const std::string& prev_type, const std::string& type) {
  if (prev_tag == 'E' || prev_tag == 'S') return true;
  if ((prev_tag == 'B' || prev_tag == 'I') && (tag == 'B' || tag == 'S' || tag == 'O')) return true;
  return prev_tag != 'O' && prev_type != type;
}

bool start_of_chunk(char prev_tag, char tag, const std::string& prev_type, const std::string& type) {
  if (tag == 'B' || tag == 'S') return true;
  if ((prev_tag == 'E' || prev_tag == 'S' || prev_tag == 'O') && (tag == 'E' || tag == 'I'))
    return true;
  return tag != 'O' && prev_type != type;
}

}  // namespace

std::vector<Entity> iob_entities(const std::vector<std::string>& tags) {
  std::vector<Entity> chunks;
  char prev_tag = 'O';
  std::string prev_type, type;
  int64_t begin = 0;
  for (size_t i = 0; i <= tags.size(); ++i) {  // a final "O" closes the last chunk
    char tag = 'O';
    type = "_";
    if (i < tags.size()) split_tag(tags[i], i, tag, type);
    if (end_of_chunk(prev_tag, tag, prev_type, type))
      chunks.push_back({prev_type, begin, int64_t(i) - 1});
    if (start_of_chunk(prev_tag, tag, prev_type, type)) begin = int64_t(i);
    prev_tag = tag;
    prev_type = type;
  }
  return chunks;
}

namespace {

// seqeval joins sentences with an "O" between them; entities keyed by (sentence, type, span)
// are the same set.
using Key = std::tuple<size_t, std::string, int64_t, int64_t>;

struct EntitySets {
  std::set<Key> gold, predicted;
};

EntitySets entity_sets(const std::vector<std::vector<std::string>>& gold,
                       const std::vector<std::vector<std::string>>& predicted) {
  if (gold.size() != predicted.size())
    fail("entity F1: {} predicted sentences for {} gold sentences", predicted.size(), gold.size());
  EntitySets e;
  for (size_t s = 0; s < gold.size(); ++s) {
    if (gold[s].size() != predicted[s].size())
      fail("entity F1: sentence {}: {} predicted tags for {} words", s, predicted[s].size(),
           gold[s].size());
    for (const Entity& x : iob_entities(gold[s])) e.gold.insert({s, x.type, x.first, x.last});
    for (const Entity& x : iob_entities(predicted[s]))
      e.predicted.insert({s, x.type, x.first, x.last});
  }
  return e;
}

// Precision, recall and F1 from the counts; 0 where undefined (seqeval zero_division "warn").
EntityScores scores_of(int64_t correct, int64_t predicted, int64_t gold) {
  EntityScores r;
  r.correct = correct, r.predicted = predicted, r.gold = gold;
  r.precision = predicted > 0 ? double(correct) / double(predicted) : 0.0;
  r.recall = gold > 0 ? double(correct) / double(gold) : 0.0;
  r.f1 = r.precision + r.recall > 0 ? 2 * r.precision * r.recall / (r.precision + r.recall) : 0.0;
  return r;
}

}  // namespace

EntityScores entity_scores(const std::vector<std::vector<std::string>>& gold,
                           const std::vector<std::vector<std::string>>& predicted) {
  const EntitySets e = entity_sets(gold, predicted);
  int64_t correct = 0;
  for (const Key& k : e.predicted) correct += int64_t(e.gold.count(k));
  return scores_of(correct, int64_t(e.predicted.size()), int64_t(e.gold.size()));
}

SeqevalReport seqeval_report(const std::vector<std::vector<std::string>>& gold,
                             const std::vector<std::vector<std::string>>& predicted) {
  const EntitySets e = entity_sets(gold, predicted);
  SeqevalReport r;
  r.overall = entity_scores(gold, predicted);
  struct Counts {
    int64_t correct = 0, predicted = 0, gold = 0;
  };
  std::map<std::string, Counts> by_type;  // sorted by name, as seqeval's target_names
  for (const Key& k : e.gold) ++by_type[std::get<1>(k)].gold;
  for (const Key& k : e.predicted) {
    Counts& c = by_type[std::get<1>(k)];
    ++c.predicted;
    c.correct += int64_t(e.gold.count(k));
  }
  for (const auto& [type, c] : by_type)
    r.per_type.emplace_back(type, scores_of(c.correct, c.predicted, c.gold));
  // accuracy_score: matching tags over all words of all sentences.
  int64_t words = 0, same = 0;
  for (size_t s = 0; s < gold.size(); ++s)
    for (size_t w = 0; w < gold[s].size(); ++w) ++words, same += gold[s][w] == predicted[s][w];
  r.accuracy = words > 0 ? double(same) / double(words) : 0.0;
  return r;
}

}  // namespace bertrt
