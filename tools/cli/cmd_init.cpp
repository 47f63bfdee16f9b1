// bertrt init: a freshly initialised BERT (Turc et al. 2019 presets) with MLM + NSP heads.
#include <fmt/format.h>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"

namespace bertrt::cli {

void add_init(CLI::App& app) {
  struct Opts {
    std::string preset, vocab, out;
    bool cased = false;
    int max_chars = 100;
    uint64_t seed = 0;
    float initializer_range = 0.02f;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("init", "create a randomly initialised BERT with MLM+NSP heads");
  c->add_option("--preset", o->preset,
                "tiny (L2 H128), mini (L4 H256), small (L4 H512), medium (L8 H512), base (L12 "
                "H768), large (L24 H1024)")
      ->required()
      ->check(CLI::IsMember({"tiny", "mini", "small", "medium", "base", "large"}));
  c->add_option("--vocab", o->vocab, "WordPiece vocab.txt (one token a line, id = line number)")
      ->required();
  c->add_flag("--cased", o->cased, "keep case and accents (default: lower-case + strip accents)");
  c->add_option("--max-input-chars-per-word", o->max_chars,
                "longer words become [UNK] (Hugging Face default 100)")
      ->capture_default_str()
      ->check(at_least(1));
  c->add_option("--seed", o->seed, "weight initialisation seed")->capture_default_str()
      ->check(seed_value());
  c->add_option("--initializer-range", o->initializer_range,
                "standard deviation of the normal initialisation of every weight matrix and "
                "embedding (Hugging Face config initializer_range)")
      ->capture_default_str();
  c->add_option("-o,--output", o->out, "output model file (.brt)")->required();
  c->callback([o] {
    check_output_path("-o", o->out);
    check_input_file("--vocab", o->vocab);
    check_distinct_files({{"-o", o->out}}, {{"--vocab", o->vocab}});
    if (!(o->initializer_range > 0 && o->initializer_range <= 1))
      fail_usage("--initializer-range must be in (0, 1], got {}", o->initializer_range);
    TokenizerOptions topts;
    topts.do_lower_case = !o->cased;
    topts.max_input_chars_per_word = o->max_chars;
    Tokenizer tokenizer(Vocab::load(o->vocab), topts);
    BertConfig config = preset_config(o->preset, tokenizer.vocab().size());
    config.pad_token_id = tokenizer.pad_id();
    config.initializer_range = o->initializer_range;
    HeadsConfig heads;
    heads.mlm = heads.nsp = true;
    BertModel model(config, heads);
    model.init_weights(o->seed);
    save_model(o->out, model, tokenizer,
               {{"source", "bertrt init"}, {"preset", o->preset}, {"seed", std::to_string(o->seed)}});
    fmt::print("{}: BERT-{} (L{} H{} A{}), {:.2f} M parameters, vocab {}\n", o->out, o->preset,
               config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
               model.num_params() / 1e6, config.vocab_size);
  });
}

}  // namespace bertrt::cli
