// bertrt quantize: post-training quantization (PTQ) of a fine-tuned fp32 model — the baseline
// quantization-aware training must beat. The fp32 model runs over calibration examples while every
// Linear records the min/max of its input (torch's MinMaxObserver calibration: ranges of the
// float activations); weights get per-output-channel symmetric int8 scales from their max |w|;
// then the int8 model is written (the same file format and int8 path as `finetune --qat int8`).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "io/model_io.h"
#include "task_flags.h"
#include "train/embedding_trainer.h"
#include "train/finetune_setup.h"
#include "train/task_data.h"

namespace bertrt::cli {

namespace {

struct Opts {
  std::string model, task, calibration, out, save_fake_quant, embeddings = "int8";
  int examples = 512, batch_size = 32, max_seq_length = 0;
  BackendChoice backend;
};

// The task the model records (or, converted, its finetuning_task or --task), and --task must be
// it: an sst2 model calibrated on MRPC pairs would take its ranges from the wrong data. Returns
// what was run, for the record.
std::string calibrate_on_task(const LoadedModel& m, Backend& be, const Opts& o) {
  BertModel& model = *m.model;
  TaskDefinition task = model_task(m, o.model, o.task);
  if (o.max_seq_length > 0) task.max_seq_length = task.squad.max_seq_length = o.max_seq_length;
  check_max_seq_length("--max-seq-length", task.max_seq_length,
                       model.config().max_position_embeddings);
  // The task's own reader and encoding, as eval's: sentences, CoNLL windows, SQuAD windows.
  const auto data = load_task_data(task, *m.tokenizer, o.calibration);
  if (data->size() == 0)
    fail("--calibration {}: no examples; post-training quantization needs calibration data to "
         "set the activation ranges", o.calibration);
  std::vector<size_t> order(std::min(data->size(), size_t(o.examples)));
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t begin = 0; begin < order.size(); begin += size_t(o.batch_size))
    model.forward(be, data->batch(order, begin, o.batch_size).inputs(), Targets{}, false);
  return fmt::format("{} examples", order.size());
}

// An embedding model sees texts: the calibration runs `bertrt embed`'s forward (prompt, lower
// case, max_seq_length of the model's head) over the first --calibration-examples texts of a
// .txt file (one a line) or of a training pair file (every text of a row, in order).
std::string calibrate_on_texts(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                               const Opts& o) {
  if (o.max_seq_length > 0)
    fail_usage("--max-seq-length: an embedding model truncates at its own max_seq_length ({})",
               model.heads().embedding->max_seq_length);
  std::vector<std::string> texts;
  const auto ends_with = [&](const char* tail) {
    const size_t n = std::strlen(tail);
    return o.calibration.size() >= n &&
           o.calibration.compare(o.calibration.size() - n, n, tail) == 0;
  };
  if (ends_with(".txt")) {
    std::ifstream in(o.calibration);
    for (std::string line; texts.size() < size_t(o.examples) && std::getline(in, line);)
      texts.push_back(line);
  } else {
    for (const PairRow& row : read_pair_file(o.calibration).rows)
      for (const std::string& t : row.texts)
        if (texts.size() < size_t(o.examples)) texts.push_back(t);
  }
  if (texts.empty())
    fail("--calibration {}: no texts; post-training quantization needs calibration data to set "
         "the activation ranges", o.calibration);
  EmbedOptions eo;
  eo.batch_size = o.batch_size;
  embed_texts(model, tokenizer, be, texts, eo);
  return fmt::format("{} texts", texts.size());
}

}  // namespace

void add_quantize(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "quantize", "post-training int8 quantization of a fine-tuned model, calibrated on examples");
  c->add_option("--model", o->model, "fine-tuned fp32 model (.brt)")->required();
  c->add_option("--task", o->task,
                "task of the model and of --calibration; default: the task the model records "
                "(a converted checkpoint without one needs it)");
  c->add_option("--calibration", o->calibration,
                "data of the task (e.g. a slice of train.tsv; a CoNLL file; SQuAD JSON): sets "
                "every activation range; an embedding model: texts, one a line (.txt), or a "
                "sentence-embedding training file (its texts)")
      ->required();
  c->add_option("--calibration-examples", o->examples,
                "use the first N examples (conll2003 and squad: windows, the parts of a long sentence or "
                "context that fit --max-seq-length; an embedding model: texts)")
      ->capture_default_str()
      ->check(at_least(1));
  c->add_option("--batch-size", o->batch_size, "examples per forward pass")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--max-seq-length", o->max_seq_length,
                "default: the value the model was fine-tuned with (as eval's)")
      ->check(at_least(3));  // [CLS] A [SEP]
  c->add_option("--embeddings", o->embeddings, "embedding tables: int8 (per row) or float")
      ->check(CLI::IsMember({"int8", "float"}))
      ->capture_default_str();
  c->add_option("--save-fake-quant", o->save_fake_quant,
                "also write the calibrated fake-quant model (fp32 weights + ranges)");
  c->add_option("-o,--output", o->out, "int8 model (.brt), written atomically")->required();
  o->backend.add_to(c);
  c->callback([o] {
    check_output_path("-o", o->out);
    if (!o->save_fake_quant.empty()) check_output_path("--save-fake-quant", o->save_fake_quant);
    check_input_file("--model", o->model);
    check_input_file("--calibration", o->calibration);
    // The fp32 source is what a later quantization starts from: -o never replaces it.
    check_distinct_files({{"-o", o->out}, {"--save-fake-quant", o->save_fake_quant}},
                         {{"--model", o->model}, {"--calibration", o->calibration}});
    const double input_mb = std::filesystem::file_size(o->model) / 1e6;
    LoadedModel m = load_model(o->model);
    BertModel& model = *m.model;
    if (model.quant_mode() == QuantMode::kInt8)
      fail("{}: already an int8 model; quantize its fp32 source", o->model);
    auto be = o->backend.make();
    model.begin_calibration(o->embeddings == "int8");
    // An embedding model calibrates on texts (embed's forward); others on their task's examples.
    const std::string calibrated =
        model.heads().embedding && (o->task.empty() || o->task == "sentence-embedding")
            ? calibrate_on_texts(model, *m.tokenizer, *be, *o)
            : calibrate_on_task(m, *be, *o);
    model.finish_calibration();
    auto meta = m.metadata;
    rename_source_architecture(meta);  // a model fine-tuned by bertrt 0.1.0 still has the key
    meta["source"] = "bertrt quantize";
    meta["quantization.source"] = "ptq";
    meta["quantization.calibration"] = fmt::format("{} ({})", o->calibration, calibrated);
    if (!o->save_fake_quant.empty()) {
      save_model(o->save_fake_quant, model, *m.tokenizer, meta);
      fmt::print("wrote {} (fake-quant: fp32 weights + calibrated ranges)\n", o->save_fake_quant);
    }
    model.convert_to_int8();
    save_model(o->out, model, *m.tokenizer, meta);
    fmt::print(
        "calibrated {} Linears on {}; wrote {} (int8, {:.2f} MB; fp32 input {:.2f} MB)\n",
        model.quant()->linears().size(), calibrated, o->out,
        std::filesystem::file_size(o->out) / 1e6, input_mb);
  });
}

}  // namespace bertrt::cli
