#!/usr/bin/env python3
"""Tiny sentence-transformers folders, and the cases to compute on them (run with Debian's
/usr/bin/python3 + python3-torch; neither sentence-transformers nor transformers is needed).

The encoder is make_hf_models.py's tiny BERT (its CONFIG and 43-token VOCAB, bert_reference.py's
module and state-dict names), its weights drawn from a fixed seed in float64 and stored as float32.
Every embedding variant shares that encoder; the folders are laid out as SentenceTransformer.save()
and CrossEncoder.save() of sentence-transformers 5.1 write them (with transformers' slow
BertTokenizer, so no tokenizer.json):

  <variant>/modules.json, config_sentence_transformers.json        the pipeline, prompts
  <variant>/config.json, pytorch_model.bin (or model.safetensors),  the Transformer module (path ""):
            vocab.txt, tokenizer_config.json, special_tokens_map.json, BertModel as save_pretrained
            sentence_bert_config.json                                 writes it, and its tokenizer
  <variant>/1_Pooling/config.json                                   every pooling key
  <variant>/<i>_Dense/config.json, pytorch_model.bin                linear.weight [, linear.bias]
  <variant>/<i>_Normalize/                                          empty, as save() leaves it
  cross_encoder/  BertForSequenceClassification, num_labels 1, with the "sentence_transformers"
                  entry CrossEncoder.save() adds to config.json
  cases.json      the sentences, the (query, passage) pairs and, per variant, what to compute
                  (encode arguments, predict's activation); st_upstream.py reads it

  --weights safetensors writes model.safetensors (save()'s default) instead of pytorch_model.bin:
  the same float32 values, so the same expected outputs.
Exit status 77 when torch is missing (the caller skips).
"""
import argparse
import json
import os
import sys

try:
    import torch
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import BertModel, randomize  # noqa: E402
from make_hf_models import CONFIG, VOCAB, write_safetensors  # noqa: E402

# The layout followed: what these versions' save() write (config_sentence_transformers.json,
# config.json's transformers_version, the cross-encoder's "sentence_transformers" entry).
LAYOUT_VERSIONS = {"sentence_transformers": "5.1.2", "transformers": "4.47.1", "pytorch": "1.13.1"}
SEED = 20240417

SENTENCES = [
    "the cat sat on the mat .",
    "",
    "The Big Dog RUNS, and the small cat sat!",
    "a dog",
    "she is unable to run",
    "  it was the old red dog ?  ",
    "we ran to café",
    "the big red dog and the small blue cat sat on the green mat , not in it .",
]
# The cross-encoder's tokenizer keeps 16 tokens (13 of text). PAIRS[3] cuts only the long
# passage; PAIRS[4] has both sides long (9 + 10), where truncation="longest_first" depends on the
# tokenizer: transformers' slow BertTokenizer (and Google's _truncate_seq_pair) keep 7 + 6, the
# Rust tokenizers library keeps 6 + 7 (max // 2 for the shorter side, the rest for the longer).
PAIRS = [
    ["the cat", "the cat sat on the mat ."],
    ["the cat", "a dog is big"],
    ["Is the dog red?", "it was the old red dog ."],
    ["red dog", "the big red dog and the small blue cat sat on the green mat , not in it ."],
    ["she is unable to run and the cat", "they run to the big dog and it is red"],
    ["", "a dog"],
]

POOLING_KEYS = ["cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken"]


def pooling(*modes, include_prompt=True):
    unknown = set(modes) - set(POOLING_KEYS)
    assert not unknown, unknown
    cfg = {"word_embedding_dimension": CONFIG["hidden_size"]}
    cfg.update({f"pooling_mode_{k}": k in modes for k in POOLING_KEYS})
    cfg["include_prompt"] = include_prompt
    return cfg


def variant(pool, dense=(), normalize=False, max_seq_length=CONFIG["max_position_embeddings"],
            do_lower_case=False, tokenizer_lower_case=True, model_max_length=None, prompts=None, cases=None):
    return dict(pool=pool, dense=list(dense), normalize=normalize, max_seq_length=max_seq_length,
                do_lower_case=do_lower_case, tokenizer_lower_case=tokenizer_lower_case,
                model_max_length=model_max_length or max_seq_length, prompts=prompts or {},
                cases=cases or [{"id": "encode", "encode": {}}])


# Dense layers: (out_features, bias, activation as config.json names it).
TANH = "torch.nn.modules.activation.Tanh"
IDENTITY = "torch.nn.modules.linear.Identity"
VARIANTS = {
    # CLS + Normalize, as BGE-style models are saved (2_Normalize).
    "pool_cls": variant(pooling("cls_token"), normalize=True),
    "pool_mean": variant(pooling("mean_tokens"), cases=[
        {"id": "encode", "encode": {}},
        {"id": "normalize_embeddings", "encode": {"normalize_embeddings": True}},
        {"id": "truncate_dim_16", "truncate_dim": 16, "encode": {}},
        {"id": "truncate_dim_16_normalize_embeddings", "truncate_dim": 16,
         "encode": {"normalize_embeddings": True}},
    ]),
    "pool_max": variant(pooling("max_tokens")),
    "pool_mean_sqrt_len": variant(pooling("mean_sqrt_len_tokens")),
    "pool_weightedmean": variant(pooling("weightedmean_tokens")),
    "pool_lasttoken": variant(pooling("lasttoken")),
    "pool_all": variant(pooling(*POOLING_KEYS)),
    "dense_normalize": variant(pooling("mean_tokens"), dense=[(20, True, TANH), (12, False, IDENTITY)],
                               normalize=True, cases=[
        {"id": "encode", "encode": {}},
        {"id": "truncate_dim_8", "truncate_dim": 8, "encode": {}},
        {"id": "truncate_dim_8_normalize_embeddings", "truncate_dim": 8, "encode": {"normalize_embeddings": True}},
    ]),
    # Over this vocabulary both named prompts are [UNK] [UNK]; the literal one is two real tokens.
    "prompts": variant(pooling("mean_tokens", include_prompt=False),
                       prompts={"query": "query: ", "passage": "passage: "}, cases=[
        {"id": "encode", "encode": {}},
        {"id": "prompt_name_query", "encode": {"prompt_name": "query"}},
        {"id": "prompt_literal", "encode": {"prompt": "it is "}},
    ]),
    # max_seq_length 8 < tokenizer_config's model_max_length 24 (as in many hub models); the
    # tokenizer keeps case and sentence_bert_config lowercases.
    "truncation": variant(pooling("mean_tokens"), max_seq_length=8, model_max_length=24, do_lower_case=True,
                          tokenizer_lower_case=False),
}
CROSS_ENCODER = {"model_max_length": 16, "cases": [
    {"id": "predict", "predict": {}},
    {"id": "logits", "predict": {"activation_fn": IDENTITY}},
]}


def dump(path, obj, indent=2, newline=False):
    """newline: transformers' files end in one; sentence-transformers' own do not."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent)
        if newline:
            f.write("\n")


def save_weights(folder, tensors, fmt):
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    if fmt == "safetensors":
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})
    else:
        torch.save(tensors, os.path.join(folder, "pytorch_model.bin"))


def bert_config(arch, extra=None):
    """config.json as transformers' save_pretrained writes it (sorted keys, indent 2)."""
    c = dict(CONFIG, architectures=[arch], attention_probs_dropout_prob=0.1, classifier_dropout=None,
             hidden_dropout_prob=0.1, model_type="bert", position_embedding_type="absolute",
             torch_dtype="float32", transformers_version=LAYOUT_VERSIONS["transformers"], use_cache=True)
    c.update(extra or {})
    return dict(sorted(c.items()))


def tokenizer_files(folder, lower_case, model_max_length):
    """vocab.txt, tokenizer_config.json and special_tokens_map.json of a slow BertTokenizer."""
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in VOCAB))
    special = {"[PAD]": "pad_token", "[UNK]": "unk_token", "[CLS]": "cls_token", "[SEP]": "sep_token",
               "[MASK]": "mask_token"}
    decoder = {str(VOCAB.index(t)): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                     "single_word": False, "special": True} for t in special}
    cfg = {"added_tokens_decoder": decoder, "clean_up_tokenization_spaces": True, "cls_token": "[CLS]",
           "do_basic_tokenize": True, "do_lower_case": lower_case, "mask_token": "[MASK]",
           "model_max_length": model_max_length, "never_split": None, "pad_token": "[PAD]", "sep_token": "[SEP]",
           "strip_accents": None, "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer",
           "unk_token": "[UNK]"}
    dump(os.path.join(folder, "tokenizer_config.json"), cfg, newline=True)
    token = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
    dump(os.path.join(folder, "special_tokens_map.json"),
         {name: dict(content=t, **token) for t, name in sorted(special.items(), key=lambda i: i[1])}, newline=True)


def draw(shape, scale, g):
    return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).float()


def make_weights():
    """The shared encoder (bert_reference.randomize's scales) and the heads, all float32."""
    torch.manual_seed(SEED)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        model = BertModel(CONFIG)
        randomize(model)
    finally:
        torch.set_default_dtype(default)
    encoder = {n: p.detach().float() for n, p in model.state_dict().items()}
    g = torch.Generator().manual_seed(SEED + 1)
    H = CONFIG["hidden_size"]
    heads = {"classifier.weight": draw((1, H), 0.3, g), "classifier.bias": draw((1,), 0.3, g)}
    dense, width = {}, None
    for name, v in VARIANTS.items():
        width = H * sum(v["pool"][f"pooling_mode_{k}"] for k in POOLING_KEYS)
        for i, (out, bias, _) in enumerate(v["dense"]):
            # 1/sqrt(in) keeps Tanh away from saturation, where errors would hide
            w = {"linear.weight": draw((out, width), width ** -0.5, g)}
            if bias:
                w["linear.bias"] = draw((out,), 0.5, g)
            dense[(name, i)] = w
            width = out
    return encoder, heads, dense


def embedding_folder(out, name, v, encoder, dense, fmt):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    dump(os.path.join(folder, "config.json"), bert_config("BertModel"), newline=True)
    save_weights(folder, encoder, fmt)
    tokenizer_files(folder, v["tokenizer_lower_case"], v["model_max_length"])
    dump(os.path.join(folder, "sentence_bert_config.json"),
         {"max_seq_length": v["max_seq_length"], "do_lower_case": v["do_lower_case"]}, indent=4)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]

    def add(kind):
        idx = len(modules)
        path = f"{idx}_{kind}"
        os.makedirs(os.path.join(folder, path), exist_ok=True)
        modules.append({"idx": idx, "name": str(idx), "path": path, "type": f"sentence_transformers.models.{kind}"})
        return os.path.join(folder, path)

    dump(os.path.join(add("Pooling"), "config.json"), v["pool"], indent=4)
    width = v["pool"]["word_embedding_dimension"] * sum(v["pool"][f"pooling_mode_{k}"] for k in POOLING_KEYS)
    for i, (out_features, bias, act) in enumerate(v["dense"]):
        d = add("Dense")
        dump(os.path.join(d, "config.json"), {"in_features": width, "out_features": out_features, "bias": bias,
                                              "activation_function": act}, indent=4)
        save_weights(d, dense[(name, i)], fmt)
        width = out_features
    if v["normalize"]:
        add("Normalize")
    dump(os.path.join(folder, "modules.json"), modules)
    dump(os.path.join(folder, "config_sentence_transformers.json"), {
        "model_type": "SentenceTransformer", "__version__": LAYOUT_VERSIONS,
        "prompts": dict({"query": "", "document": ""}, **v["prompts"]), "default_prompt_name": None,
        "similarity_fn_name": "cosine"})
    return width


def cross_encoder_folder(out, encoder, heads, fmt):
    folder = os.path.join(out, "cross_encoder")
    os.makedirs(folder, exist_ok=True)
    dump(os.path.join(folder, "config.json"), bert_config("BertForSequenceClassification", {
        "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
        "sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid",
                                  "version": LAYOUT_VERSIONS["sentence_transformers"]}}), newline=True)
    weights = {f"bert.{n}": t for n, t in encoder.items()}
    weights.update(heads)
    save_weights(folder, weights, fmt)
    tokenizer_files(folder, True, CROSS_ENCODER["model_max_length"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write the model folders and cases.json into")
    ap.add_argument("--weights", choices=["bin", "safetensors"], default="bin",
                    help="pytorch_model.bin (torch.save, default) or model.safetensors")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    encoder, heads, dense = make_weights()
    cases = {"sentences": SENTENCES, "pairs": PAIRS, "weights": args.weights, "variants": {}}
    for name, v in VARIANTS.items():
        width = embedding_folder(args.out, name, v, encoder, dense, args.weights)
        cases["variants"][name] = {"kind": "SentenceTransformer", "folder": name, "dimension": width,
                                   "max_seq_length": v["max_seq_length"], "prompts": v["prompts"],
                                   "cases": v["cases"]}
    cross_encoder_folder(args.out, encoder, heads, args.weights)
    cases["variants"]["cross_encoder"] = {"kind": "CrossEncoder", "folder": "cross_encoder",
                                          "max_length": CROSS_ENCODER["model_max_length"],
                                          "cases": CROSS_ENCODER["cases"]}
    dump(os.path.join(args.out, "cases.json"), cases)


if __name__ == "__main__":
    main()
