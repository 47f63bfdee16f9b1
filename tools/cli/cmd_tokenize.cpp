// bertrt tokenize: stdin text (a tab separates a pair) → WordPiece tokens and ids.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"

namespace bertrt::cli {

void add_tokenize(CLI::App& app) {
  struct Opts {
    std::string model;
    bool json = false;
    int max_seq_length = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "tokenize",
      "split stdin lines into pieces (WordPiece tokens): [CLS] A [SEP] B [SEP]; a tab separates "
      "a pair");
  c->footer(
      "Example:\n"
      "  echo 'hello world' | bertrt tokenize --model m.brt --json | bertrt forward --model m.brt");
  c->add_option("--model", o->model, "model file (.brt) whose tokenizer to use")->required();
  c->add_flag("--json", o->json,
              "one JSON object a line: {\"tokens\", \"input_ids\", \"token_type_ids\"}, which "
              "`bertrt forward` reads as it is (it ignores \"tokens\")");
  c->add_option("--max-seq-length", o->max_seq_length, "truncate pairs longest-first (0: no limit)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {  // 0, or room for [CLS] A [SEP]
            if (s == "0" || at_least(3)(s).empty()) return {};
            return "must be 0 (no limit) or ≥ 3, got " + s;
          },
          "", "0 or at least 3"));
  c->callback([o] {
    check_input_file("--model", o->model);
    ModelFile f = ModelFile::open(o->model);
    auto tokenizer = make_tokenizer(f.contents().tokenizer);
    for_each_stdin_line([&](const std::string& line, size_t n) {
      const size_t tab = line.find('\t');
      std::optional<std::string> b;
      if (tab != std::string::npos) b = line.substr(tab + 1);
      // A third field would be joined into the second text (predict refuses it too).
      if (b && b->find('\t') != std::string::npos)
        fail("stdin: line {}: more than two tab-separated texts (a text or a pair of them "
             "expected)", n);
      const Encoding e = tokenizer->encode(line.substr(0, tab), b, o->max_seq_length);
      if (o->json) {
        nlohmann::json j = {{"tokens", e.tokens}, {"input_ids", e.input_ids},
                            {"token_type_ids", e.token_type_ids}};
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{}\n", fmt::join(e.tokens, " "));
      }
    });
  });
}

}  // namespace bertrt::cli
