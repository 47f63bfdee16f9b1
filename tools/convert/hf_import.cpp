#include "convert/hf_import.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "convert/hf_config.h"
#include "convert/hf_names.h"
#include "convert/safetensors_source.h"
#include "convert/st_import.h"
#include "convert/tf_bert_names.h"
#include "convert/tf_bundle.h"
#include "convert/convert_input.h"
#include "core/error.h"
#include "core/random.h"
#include "io/config_check.h"
#include "model/params.h"
#include "tasks/task_definition.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;

// "a, b, c and 4 more" for messages.
std::string name_list(const std::vector<std::string>& names, size_t max_shown = 6) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max_shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max_shown) s += fmt::format(" and {} more", names.size() - max_shown);
  return s;
}

// Tensor i as f32 (one transient copy; only used for the tied-copy check).
std::vector<float> floats_of(const CheckpointReader& r, size_t i) {
  const CheckpointTensor& t = r.tensors()[i];
  if (const uint8_t* v = tensor_view(r, i)) return bytes_to_f32(t, std::vector<uint8_t>(v, v + t.nbytes));
  return bytes_to_f32(t, r.read(i));
}

// A tensor saved twice (the tied decoder weight, decoder.bias) must equal the one bertrt keeps.
void check_equal(const CheckpointReader& r, size_t dup, size_t kept, const std::string& kept_name) {
  const CheckpointTensor &a = r.tensors()[dup], &b = r.tensors()[kept];
  if (a.shape != b.shape)
    fail("{}: tensor '{}' has shape [{}] but '{}' (which it must equal: bertrt ties them) has [{}]", a.location,
         a.name, fmt::join(a.shape, ", "), b.name, fmt::join(b.shape, ", "));
  const std::vector<float> va = floats_of(r, dup), vb = floats_of(r, kept);
  for (size_t i = 0; i < va.size(); ++i)
    if (va[i] != vb[i])
      fail("{}: tensor '{}' differs from '{}' (element {}: {} vs {}): an untied output layer, which bertrt "
           "cannot store (it ties {} to {})", a.location, a.name, b.name, i, va[i], vb[i], a.name, kept_name);
}

// HF BertPreTrainedModel._init_weights for a Linear: weight ~ N(0, initializer_range²), bias 0.
std::vector<float> init_normal(size_t n, float stddev, std::mt19937_64& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(stddev * random_normal(rng));
  return v;
}

// The pooler is the only tensor allowed to be absent (see hf_import.h); kept after the tensors read.
void init_absent_pooler(ConvertedModel& m, const std::vector<std::string>& absent, const BertConfig& config,
                        const std::string& where, const ConvertOptions& opts) {
  if (absent.empty()) return;
  std::mt19937_64 rng(0);
  const int64_t H = config.hidden_size;
  for (const std::string& name : absent) {
    if (name == "bert.pooler.dense.weight")
      emit_owned(m, name, {H, H}, init_normal(H * H, config.initializer_range, rng), opts.dtype);
    else if (name == "bert.pooler.dense.bias")
      emit_owned(m, name, {H}, std::vector<float>(H, 0.f), opts.dtype);
    else
      fail("{}: tensor '{}' is missing", where, name);
  }
  if (!opts.pooler_unused)
    m.warnings.push_back(fmt::format("{}: no pooler ({}); initialised as transformers does (N(0, {}²) weight, zero "
                                   "bias): pooler_output means nothing until fine-tuned",
                                   where, name_list(absent), config.initializer_range));
  std::string list;
  for (const std::string& n : absent) list += (list.empty() ? "" : ",") + n;
  m.contents.metadata["converter.initialized"] = list;
}

void provenance(ConvertedModel& m, const std::string& weights, const std::string& architecture) {
  auto& meta = m.contents.metadata;
  meta["source"] = "bertrt-convert";
  meta["source_format"] = m.reader->format();
  meta["source_path"] = weights;
  meta["converter_version"] = converter_version();
  meta["architecture"] = architecture;
}

void read_tokenizer(ConvertedModel& m, const InputPaths& in, const ConvertOptions& opts, int vocab_size) {
  const std::string vocab = opts.vocab.empty() ? in.vocab : opts.vocab;
  if (!fs::exists(vocab))
    fail("{}: vocab.txt is missing (the folder has no tokenizer vocab; pass --vocab FILE)", vocab);
  HfTokenizer t = read_hf_tokenizer(vocab, in.dir, m.warnings);
  if (static_cast<int>(t.spec.vocab.size()) > vocab_size) {
    m.warnings.push_back(fmt::format(
        "{}: {} tokens but vocab_size is {}: the last {} (from '{}') have no embedding row and are dropped",
        vocab, t.spec.vocab.size(), vocab_size, t.spec.vocab.size() - vocab_size, t.spec.vocab[vocab_size]));
    t.spec.vocab.resize(vocab_size);
    for (const std::string* tok : {&t.spec.unk_token, &t.spec.sep_token, &t.spec.pad_token, &t.spec.cls_token,
                                   &t.spec.mask_token})
      if (std::find(t.spec.vocab.begin(), t.spec.vocab.end(), *tok) == t.spec.vocab.end())
        fail("{}: special token '{}' lies beyond vocab_size {}", vocab, *tok, vocab_size);
  }
  m.contents.tokenizer = std::move(t.spec);
  if (t.model_max_length) m.contents.metadata["tokenizer.model_max_length"] = std::to_string(*t.model_max_length);
}

// Why an exported task record (config.json's bertrt_task) cannot be kept, or "" when it can:
// a task bertrt knows, consistent with finetuning_task, and a record a .brt may hold
// (task_record_problem). An unknown name is said first: comparing it with finetuning_task says less.
std::string exported_task_problem(const TaskDefinition& d, const HfConfig& cfg,
                                  const HeadsConfig& h) {
  const std::vector<std::string> names = task_names();
  if (std::find(names.begin(), names.end(), d.name) == names.end())
    return task_record_problem(d, h, cfg.config);
  if (!cfg.finetuning_task.empty() && cfg.finetuning_task != d.name)
    return fmt::format("it names task {}, finetuning_task {}", d.name, cfg.finetuning_task);
  return task_record_problem(d, h, cfg.config);
}

}  // namespace

ConvertedModel import_hf(const InputPaths& in, const ConvertOptions& opts) {
  ConvertedModel m;
  const HfConfig cfg = read_hf_config(in.config);
  m.reader = open_checkpoint(in.weights);
  const CheckpointReader& r = *m.reader;
  const HfNameMap names = map_hf_names(r.tensors(), in.weights);
  std::set<std::string> canonical;
  for (const auto& e : names.tensors) canonical.insert(e.name);
  // Before the layout below (proportional to num_hidden_layers): the config must fit the weights.
  {
    std::map<std::string, const std::vector<int64_t>*> shapes;
    TensorsPresent present;
    for (const auto& e : names.tensors) {
      const std::vector<int64_t>& shape = r.tensors()[e.source].shape;
      shapes[e.name] = &shape;
    }
    present.count = names.tensors.size();
    present.shape_of = [&](const std::string& name) -> const std::vector<int64_t>* {
      const auto it = shapes.find(name);
      return it == shapes.end() ? nullptr : it->second;
    };
    check_config_against_tensors(cfg.config, present,
                                 fmt::format("{} (weights {})", in.config, in.weights));
  }
  const HfHeads heads = hf_heads(cfg, canonical, in.config);
  m.warnings.insert(m.warnings.end(), heads.warnings.begin(), heads.warnings.end());
  m.contents.config = cfg.config;
  m.contents.heads = heads.heads;
  if (!cfg.bertrt_task.empty()) {
    // A model exported by bertrt: its task record comes back while it is one the commands can
    // run and still describes the head; a record edited in config.json (or an id2label edited
    // beside it) is dropped with the reason, and the task is read as for any checkpoint.
    std::string why;
    try {
      why = exported_task_problem(
          parse_task_definition(cfg.bertrt_task, in.config + " bertrt_task"), cfg, heads.heads);
    } catch (const Error& e) {
      why = e.what();
    }
    if (why.empty())
      m.contents.metadata["task"] = cfg.bertrt_task;
    else
      m.warnings.push_back(fmt::format("{}: bertrt_task was not kept: {}; eval and predict read "
                                       "the task from finetuning_task or --task",
                                       in.config, why));
  }

  // What the config and the heads need, in Hugging Face order.
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
  const ParamLayout layout = bert_param_layout(cfg.config, heads.heads);
  for (const ParamInfo& p : layout.params()) expected.push_back({p.name, p.shape});
  std::set<std::string> expected_names;
  for (const auto& e : expected) expected_names.insert(e.first);

  std::vector<std::string> unknown;
  for (const auto& e : names.tensors)
    if (!expected_names.count(e.name)) unknown.push_back(r.tensors()[e.source].name);
  for (const auto& d : names.duplicates)  // a tied copy is only known when its head is
    if (!expected_names.count(d.equal_to) || (d.equal_to == "bert.embeddings.word_embeddings.weight" && !heads.heads.mlm))
      unknown.push_back(r.tensors()[d.source].name);
  if (!unknown.empty()) {
    const std::string msg = fmt::format("{}: {} tensor(s) that {} (config.json) does not have: {}", in.weights,
                                        unknown.size(), heads.architecture, name_list(unknown));
    if (!opts.drop_unknown) fail("{} (--drop-unknown drops them)", msg);
    m.warnings.push_back(msg + "; dropped (--drop-unknown)");
  }
  for (const auto& d : names.duplicates)
    if (std::find(unknown.begin(), unknown.end(), r.tensors()[d.source].name) == unknown.end())
      if (const auto* kept = names.find(d.equal_to)) check_equal(r, d.source, kept->source, d.equal_to);

  std::vector<PlannedTensor> plan;
  std::vector<std::string> missing, initialized;
  for (const auto& [name, shape] : expected) {
    const HfNameMap::Entry* e = names.find(name);
    if (!e) {
      (name.rfind("bert.pooler.", 0) == 0 ? initialized : missing).push_back(name);
      continue;
    }
    const CheckpointTensor& t = r.tensors()[e->source];
    if (t.shape != shape)
      fail("{}: tensor '{}' has shape [{}], but {} implies [{}]", t.location, t.name, fmt::join(t.shape, ", "),
           in.config, fmt::join(shape, ", "));
    plan.push_back({name, e->source, false, shape});
  }
  if (!missing.empty())
    fail("{}: {} tensor(s) that {} (config.json) needs are missing: {}", in.weights, missing.size(),
         heads.architecture, name_list(missing));
  emit_tensors(m, plan, opts);
  init_absent_pooler(m, initialized, cfg.config, in.weights, opts);

  read_tokenizer(m, in, opts, cfg.config.vocab_size);
  // The class of what was converted: BertForMaskedLM for a BertForPreTraining file without NSP.
  provenance(m, in.weights,
             heads.missing.empty() ? heads.architecture : hf_architecture(heads.heads));
  auto& meta = m.contents.metadata;
  if (heads.inferred) meta["architecture_inferred"] = "true";
  if (!heads.missing.empty()) {
    meta["architecture_declared"] = heads.architecture;
    std::string list;
    for (const std::string& n : heads.missing) list += (list.empty() ? "" : ",") + n;
    meta["converter.missing_heads"] = list;
  }
  if (!names.dropped.empty()) {
    std::string list;
    for (const std::string& n : names.dropped) list += (list.empty() ? "" : ",") + n;
    meta["converter.dropped"] = list;
  }
  return m;
}

ConvertedModel import_tf1(const InputPaths& in, const ConvertOptions& opts) {
  ConvertedModel m;
  m.reader = open_tf_bundle(in.weights);
  const TfBertCheckpoint tf = map_tf_bert(*m.reader, in.config);
  m.contents.config = tf.config;
  m.contents.heads = tf.heads;
  std::vector<PlannedTensor> plan;
  for (const MappedTensor& t : tf.tensors) plan.push_back({t.hf_name, t.source_index, t.transpose, t.hf_shape});
  emit_tensors(m, plan, opts);
  init_absent_pooler(m, tf.absent, tf.config, in.weights, opts);
  if (!std::filesystem::exists(std::filesystem::path(in.dir) / "tokenizer_config.json"))
    m.warnings.push_back(in.dir + ": no tokenizer_config.json; do_lower_case = true (an uncased model). For a "
                                  "cased model put {\"do_lower_case\": false} in tokenizer_config.json there");
  read_tokenizer(m, in, opts, tf.config.vocab_size);
  provenance(m, in.weights, hf_architecture(tf.heads));
  m.contents.metadata["converter.skipped"] = std::to_string(tf.skipped.size()) + " optimizer/step variables";
  return m;
}

ConvertedModel import_checkpoint(const std::string& path, const ConvertOptions& opts) {
  if (is_sentence_transformers_folder(path)) return import_sentence_transformers(path, opts);
  const InputPaths in = find_input(path);
  return in.kind == InputPaths::Kind::tf1 ? import_tf1(in, opts) : import_hf(in, opts);
}

}  // namespace bertrt::convert
