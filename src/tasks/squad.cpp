#include "tasks/squad.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <system_error>
#include <unordered_set>

#include "core/error.h"
#include "core/json_excerpt.h"

namespace bertrt {
namespace {

using nlohmann::json;

const json& field(const json& obj, const char* key, json::value_t type, const std::string& path,
                  const std::string& where) {
  if (!obj.is_object()) fail("{}: {}: expected a JSON object", path, where);
  const auto it = obj.find(key);
  if (it == obj.end()) fail("{}: {}: missing field '{}'", path, where, key);
  const bool ok = it->type() == type ||
                  (type == json::value_t::number_unsigned && it->is_number_integer() &&
                   it->get<long long>() >= 0);
  if (!ok && type == json::value_t::number_unsigned && it->is_number())
    fail("{}: {}: field '{}' must be a non-negative integer, got {}", path, where, key,
         json_excerpt(*it));
  if (!ok) fail("{}: {}: field '{}' has the wrong type ({})", path, where, key, it->type_name());
  return *it;
}

// Byte offset of code point `cp` in valid UTF-8 `s`, or npos when s has fewer code points.
size_t byte_offset(const std::string& s, size_t cp) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (seen++ == cp) return i;
  }
  return seen == cp ? s.size() : std::string::npos;
}

SquadAnswer read_answer(const json& a, const std::string& context, const std::string& id,
                        const std::string& path) {
  const std::string where = "question " + id;
  SquadAnswer ans;
  ans.text = field(a, "text", json::value_t::string, path, where + " answer").get<std::string>();
  if (ans.text.empty())  // a span of no characters: nothing to train on or to score against
    fail("{}: question '{}': an answer's text is empty", path, id);
  ans.char_start =
      field(a, "answer_start", json::value_t::number_unsigned, path, where + " answer").get<size_t>();
  ans.byte_start = byte_offset(context, ans.char_start);
  if (ans.byte_start == std::string::npos || context.compare(ans.byte_start, ans.text.size(), ans.text) != 0) {
    const std::string there =
        ans.byte_start == std::string::npos ? "past the end" : context.substr(ans.byte_start, ans.text.size());
    fail("{}: question {}: answer '{}' at offset {} does not match the context there ('{}')", path,
         id, ans.text, ans.char_start, there);
  }
  return ans;
}

}  // namespace

SquadDataset read_squad(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: SQuAD file not found", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path);
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
  SquadDataset data;
  std::unordered_set<std::string> ids;  // evaluate-v1.1.py keys the predictions by id
  const json& articles = field(root, "data", json::value_t::array, path, "top level");
  for (size_t a = 0; a < articles.size(); ++a) {
    const std::string wa = "article " + std::to_string(a);
    data.titles.push_back(field(articles[a], "title", json::value_t::string, path, wa).get<std::string>());
    const json& paragraphs = field(articles[a], "paragraphs", json::value_t::array, path, wa);
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string wp = wa + " paragraph " + std::to_string(p);
      const std::string context =
          field(paragraphs[p], "context", json::value_t::string, path, wp).get<std::string>();
      const json& qas = field(paragraphs[p], "qas", json::value_t::array, path, wp);
      for (size_t q = 0; q < qas.size(); ++q) {
        const std::string wq = wp + " question " + std::to_string(q);
        SquadExample ex;
        ex.id = field(qas[q], "id", json::value_t::string, path, wq).get<std::string>();
        if (!ids.insert(ex.id).second)
          fail("{}: {}: id '{}' is used by an earlier question (the metric keys answers by id)",
               path, wq, ex.id);
        ex.question = field(qas[q], "question", json::value_t::string, path, wq).get<std::string>();
        ex.context = context;
        ex.article = a;
        for (const json& ans : field(qas[q], "answers", json::value_t::array, path, wq))
          ex.answers.push_back(read_answer(ans, context, ex.id, path));
        // SQuAD v1.1 answers every question; v2.0's unanswerable ones would fail the metric at
        // the first evaluation, after a whole epoch of training, so they fail here.
        if (ex.answers.empty())
          fail("{}: question '{}': no answers (SQuAD v1.1 gives every question at least one)",
               path, ex.id);
        data.examples.push_back(std::move(ex));
      }
    }
  }
  if (data.examples.empty()) fail("{}: no questions", path);
  return data;
}

std::vector<SquadExample> select_articles(const SquadDataset& data, size_t first, size_t last) {
  if (first >= last || last > data.titles.size())
    fail("SQuAD: article range [{}, {}) is empty or beyond the {} articles", first, last,
         data.titles.size());
  std::vector<SquadExample> out;
  for (const SquadExample& e : data.examples)
    if (e.article >= first && e.article < last) out.push_back(e);
  return out;
}

}  // namespace bertrt
