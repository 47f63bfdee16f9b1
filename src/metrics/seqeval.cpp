#include "metrics/seqeval.h"

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

EntityScores entity_scores(const std::vector<std::vector<std::string>>& gold,
                           const std::vector<std::vector<std::string>>& predicted) {
  if (gold.size() != predicted.size())
    fail("entity F1: {} predicted sentences for {} gold sentences", predicted.size(), gold.size());
  // seqeval joins sentences with an "O" between them; entities keyed by (sentence, type, span)
  // are the same set.
  using Key = std::tuple<size_t, std::string, int64_t, int64_t>;
  std::set<Key> g, p;
  for (size_t s = 0; s < gold.size(); ++s) {
    if (gold[s].size() != predicted[s].size())
      fail("entity F1: sentence {}: {} predicted tags for {} words", s, predicted[s].size(),
           gold[s].size());
    for (const Entity& e : iob_entities(gold[s])) g.insert({s, e.type, e.first, e.last});
    for (const Entity& e : iob_entities(predicted[s])) p.insert({s, e.type, e.first, e.last});
  }
  EntityScores r;
  r.gold = int64_t(g.size());
  r.predicted = int64_t(p.size());
  for (const Key& k : p) r.correct += g.count(k);
  r.precision = r.predicted > 0 ? double(r.correct) / double(r.predicted) : 0.0;
  r.recall = r.gold > 0 ? double(r.correct) / double(r.gold) : 0.0;
  r.f1 = r.precision + r.recall > 0 ? 2 * r.precision * r.recall / (r.precision + r.recall) : 0.0;
  return r;
}

}  // namespace bertrt
