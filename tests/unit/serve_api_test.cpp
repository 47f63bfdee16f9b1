// `bertrt serve` without sockets: the request bodies of TEI and OpenAI parsed and refused with
// TEI's status codes, base64 embeddings, API keys, the batching queue and the metrics text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "serve/api.h"
#include "serve/batch_queue.h"
#include "serve/metrics.h"

namespace bertrt::serve {
namespace {

// The status an ApiError from fn carries, and its message in `message`.
template <typename Fn>
int status_of(Fn fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const ApiError& e) {
    if (message) *message = e.what();
    return e.status;
  }
  return 200;
}

const Limits kLimits{};

TEST(ServeApi, EmbedRequestFieldsAsTeiNamesThem) {
  const EmbedRequest one = parse_embed_request(R"({"inputs": "a cat"})", kLimits);
  EXPECT_EQ(one.inputs, std::vector<std::string>{"a cat"});
  EXPECT_TRUE(one.single);
  EXPECT_TRUE(one.normalize);  // TEI's default
  EXPECT_FALSE(one.truncate.has_value());
  const EmbedRequest r = parse_embed_request(
      R"({"inputs": ["a", "b"], "normalize": false, "truncate": true, "dimensions": 8,
          "prompt_name": "query", "truncation_direction": "Right", "unknown": 1})",
      kLimits);
  EXPECT_EQ(r.inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(r.single);
  EXPECT_FALSE(r.normalize);
  EXPECT_EQ(r.truncate, std::optional<bool>(true));
  EXPECT_EQ(r.dimensions, 8);
  EXPECT_EQ(r.prompt_name, "query");
  // null is an absent field, as serde's Option reads it.
  EXPECT_EQ(parse_embed_request(R"({"inputs": "a", "dimensions": null})", kLimits).dimensions, 0);
}

TEST(ServeApi, OpenAiRequest) {
  const EmbedRequest r = parse_openai_request(
      R"({"input": ["x", "y"], "model": "emb", "encoding_format": "base64", "user": "u"})", kLimits);
  EXPECT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.model, "emb");
  EXPECT_TRUE(r.base64);
  EXPECT_FALSE(parse_openai_request(R"({"input": "x"})", kLimits).base64);
  EXPECT_EQ(status_of([] { parse_openai_request(R"({"input": "x", "encoding_format": "int8"})", kLimits); }), 422);
}

TEST(ServeApi, MalformedJsonIs400WrongTypesAre422EmptyIs400) {
  std::string msg;
  EXPECT_EQ(status_of([] { parse_embed_request("{\"inputs\": ", kLimits); }, &msg), 400);
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { parse_embed_request("", kLimits); }), 400);
  EXPECT_EQ(status_of([] { parse_embed_request("[1]", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({})", kLimits); }, &msg), 422);
  EXPECT_NE(msg.find("missing field `inputs`"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": 3})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": ["a", 3]})", kLimits); }, &msg), 422);
  EXPECT_NE(msg.find("`inputs[1]` must be a string"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": [1, 2]})", kLimits); }, &msg), 422);
  EXPECT_NE(msg.find("token ids"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": "a", "normalize": "yes"})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": "a", "dimensions": -1})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": "a", "dimensions": 0})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": "a", "dimensions": 1.5})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": "a", "truncation_direction": "Left"})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": []})", kLimits); }, &msg), 400);
  EXPECT_EQ(msg, "`inputs` cannot be empty");
  EXPECT_EQ(status_of([] { parse_rerank_request(R"({"query": "q", "texts": []})", kLimits); }), 400);
}

TEST(ServeApi, ClientBatchSizeLimitIsNamed) {
  Limits two;
  two.max_client_batch_size = 2;
  std::string msg;
  EXPECT_EQ(status_of([&] { parse_embed_request(R"({"inputs": ["a", "b", "c"]})", two); }, &msg), 422);
  EXPECT_NE(msg.find("--max-client-batch-size"), std::string::npos) << msg;
  EXPECT_EQ(status_of([&] { parse_embed_request(R"({"inputs": ["a", "b"]})", two); }), 200);
}

TEST(ServeApi, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep(100000, '[');
  EXPECT_EQ(status_of([&] { parse_embed_request(deep, kLimits); }), 422);
  // Brackets inside strings are text.
  EXPECT_EQ(status_of([] { parse_embed_request(R"({"inputs": "[[[[[[[[[[[[[[[[[[[[[[[[[[[["})", kLimits); }), 200);
}

TEST(ServeApi, RerankRequest) {
  const RerankRequest r = parse_rerank_request(
      R"({"query": "q", "texts": ["a", "b"], "raw_scores": true, "return_text": true})", kLimits);
  EXPECT_EQ(r.query, "q");
  EXPECT_EQ(r.texts.size(), 2u);
  EXPECT_TRUE(r.raw_scores);
  EXPECT_TRUE(r.return_text);
  EXPECT_EQ(status_of([] { parse_rerank_request(R"({"texts": ["a"]})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_rerank_request(R"({"query": "q", "texts": "a"})", kLimits); }), 422);
}

TEST(ServeApi, PredictInputsAsTeiReadsThem) {
  PredictRequest r = parse_predict_request(R"({"inputs": "a"})", kLimits);
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_FALSE(r.batch);
  EXPECT_FALSE(r.inputs[0].second.has_value());
  r = parse_predict_request(R"({"inputs": ["a", "b"]})", kLimits);  // one pair
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_FALSE(r.batch);
  EXPECT_EQ(r.inputs[0].second, std::optional<std::string>("b"));
  r = parse_predict_request(R"({"inputs": [["a"], ["b", "c"]], "raw_scores": true})", kLimits);
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.batch);
  EXPECT_TRUE(r.raw_scores);
  EXPECT_EQ(r.inputs[1].first, "b");
  EXPECT_EQ(status_of([] { parse_predict_request(R"({"inputs": ["a", "b", "c"]})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_predict_request(R"({"inputs": [["a", "b", "c"]]})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_predict_request(R"({"inputs": [[]]})", kLimits); }), 422);
  EXPECT_EQ(status_of([] { parse_predict_request(R"({"inputs": []})", kLimits); }), 400);
  EXPECT_EQ(status_of([] { parse_predict_request(R"({"inputs": [["a"], "b"]})", kLimits); }), 422);
}

TEST(ServeApi, TokenizeRequest) {
  const TokenizeRequest r =
      parse_tokenize_request(R"({"inputs": ["a"], "add_special_tokens": false})", kLimits);
  EXPECT_FALSE(r.add_special_tokens);
  EXPECT_TRUE(parse_tokenize_request(R"({"inputs": "a"})", kLimits).add_special_tokens);
}

TEST(ServeApi, ErrorBodies) {
  const ApiError e(422, ErrorType::kValidation, "bad \"x\"");
  const nlohmann::json tei = nlohmann::json::parse(error_body(e));
  EXPECT_EQ(tei["error"], "bad \"x\"");
  EXPECT_EQ(tei["error_type"], "Validation");
  const nlohmann::json oa = nlohmann::json::parse(openai_error_body(e));
  EXPECT_EQ(oa["message"], "bad \"x\"");
  EXPECT_EQ(oa["code"], 422);
  EXPECT_EQ(oa["type"], "Validation");
  // Bytes that are not UTF-8 (echoed from a request) still make valid JSON.
  EXPECT_NO_THROW(nlohmann::json::parse(error_body(ApiError(400, ErrorType::kEmpty, "\xff"))));
}

TEST(ServeApi, Base64FloatsAreLittleEndianFloat32) {
  // 1.0f = 00 00 80 3f, 2.0f = 00 00 00 40, -0.5f = 00 00 00 bf: base64 of those 12 bytes.
  const float v[] = {1.0f, 2.0f, -0.5f};
  EXPECT_EQ(base64_floats(v, 3), "AACAPwAAAEAAAAC/");
  EXPECT_EQ(base64_floats(v, 1), "AACAPw==");  // 4 bytes: two '=' of padding
  EXPECT_EQ(base64_floats(v, 0), "");
}

TEST(ServeApi, ApiKeys) {
  const std::vector<std::string> keys = parse_api_keys("# ours\n\n  sk-one \r\nsk-two\n", "k.txt");
  EXPECT_EQ(keys, (std::vector<std::string>{"sk-one", "sk-two"}));
  EXPECT_THROW(parse_api_keys("# none\n\n", "k.txt"), Error);
  EXPECT_TRUE(authorized("Bearer sk-one", keys));
  EXPECT_TRUE(authorized("Bearer sk-two", keys));
  EXPECT_FALSE(authorized("Bearer sk-on", keys));
  EXPECT_FALSE(authorized("Bearer sk-one2", keys));
  EXPECT_FALSE(authorized("sk-one", keys));
  EXPECT_FALSE(authorized("Basic sk-one", keys));
  EXPECT_FALSE(authorized("", keys));
  EXPECT_FALSE(authorized("Bearer ", keys));
}

struct TestJob {
  std::string key;
  size_t tokens;
  int id;
};

std::shared_ptr<TestJob> job(const std::string& key, size_t tokens, int id) {
  return std::make_shared<TestJob>(TestJob{key, tokens, id});
}

std::vector<int> ids(const std::vector<std::shared_ptr<TestJob>>& batch) {
  std::vector<int> out;
  for (const auto& j : batch) out.push_back(j->id);
  return out;
}

TEST(ServeQueue, PacksOneKeyUpToTheTokenBudgetInOrder) {
  BatchQueue<TestJob> q(10);
  ASSERT_TRUE(q.push(job("a", 10, 1)));
  ASSERT_TRUE(q.push(job("b", 10, 2)));
  ASSERT_TRUE(q.push(job("a", 20, 3)));
  ASSERT_TRUE(q.push(job("a", 30, 4)));  // 10 + 20 + 30 > 50: waits for the next batch
  ASSERT_TRUE(q.push(job("a", 5, 5)));
  EXPECT_EQ(ids(q.take(50, 100)), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(ids(q.take(50, 100)), (std::vector<int>{2}));  // the other key kept its place
  EXPECT_EQ(ids(q.take(50, 100)), (std::vector<int>{4}));
  EXPECT_EQ(q.size(), 0u);
}

TEST(ServeQueue, ALargerRequestGoesAloneAndMaxJobsCaps) {
  BatchQueue<TestJob> q(10);
  q.push(job("a", 100, 1));
  q.push(job("a", 1, 2));
  q.push(job("a", 1, 3));
  q.push(job("a", 1, 4));
  EXPECT_EQ(ids(q.take(50, 100)), (std::vector<int>{1}));
  EXPECT_EQ(ids(q.take(50, 2)), (std::vector<int>{2, 3}));
  EXPECT_EQ(ids(q.take(50, 1)), (std::vector<int>{4}));
}

TEST(ServeQueue, BoundedAndClosed) {
  BatchQueue<TestJob> q(2);
  EXPECT_TRUE(q.push(job("a", 1, 1)));
  EXPECT_TRUE(q.push(job("a", 1, 2)));
  EXPECT_FALSE(q.push(job("a", 1, 3)));  // full: the server answers 429
  q.close();
  EXPECT_FALSE(q.push(job("a", 1, 4)));
  EXPECT_EQ(ids(q.take(10, 10)), (std::vector<int>{1, 2}));  // drained after close
  EXPECT_TRUE(q.take(10, 10).empty());
}

TEST(ServeQueue, TakeWaitsForAPushFromAnotherThread) {
  BatchQueue<TestJob> q(4);
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    q.push(job("a", 1, 7));
  });
  EXPECT_EQ(ids(q.take(10, 10)), (std::vector<int>{7}));
  producer.join();
}

TEST(ServeMetrics, PrometheusText) {
  Metrics m;
  m.request("/embed", 200, 0.003);
  m.request("/embed", 200, 0.2);
  m.request("/embed", 429, 0.0001);
  m.batch(3, 40, 0.01, {0.001, 0.002, 0.5});
  const std::string t = m.render(2, 64);
  EXPECT_NE(t.find("bertrt_requests_total{route=\"/embed\",code=\"200\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("bertrt_requests_total{route=\"/embed\",code=\"429\"} 1\n"), std::string::npos);
  // Cumulative buckets: 0.0001 and 0.003 are ≤ 0.005; all three ≤ +Inf.
  EXPECT_NE(t.find("bertrt_request_duration_seconds_bucket{route=\"/embed\",le=\"0.005\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("bertrt_request_duration_seconds_bucket{route=\"/embed\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("bertrt_request_duration_seconds_count{route=\"/embed\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("bertrt_queue_size 2\n"), std::string::npos);
  EXPECT_NE(t.find("bertrt_tokens_total 40\n"), std::string::npos);
  EXPECT_NE(t.find("bertrt_batch_requests_bucket{le=\"4\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("bertrt_queue_duration_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE bertrt_batch_tokens histogram\n"), std::string::npos);
}

}  // namespace
}  // namespace bertrt::serve
