#!/usr/bin/env python3
"""Tiny random BERT checkpoints in the Hugging Face layouts bertrt-convert reads, with float64
reference outputs (run with Debian's /usr/bin/python3 + python3-torch; no transformers needed).

The model is bert_reference.py's (Hugging Face module structure and state-dict names). All weights
are drawn in float64 and rounded to float32 once; the f16/bf16 files hold those float32 weights
rounded again (torch .half()/.bfloat16(), round to nearest even), and each precision's reference
outputs are computed in float64 FROM THE STORED WEIGHTS, so a converter that reads them exactly
leaves only bertrt's fp32 arithmetic as error.

Writes into --out:
  ref.safetensors   input/{input_ids,token_type_ids,attention_mask} [B, T] and, per variant
                    V in gelu_f32, gelu_f16, gelu_bf16, gelu_new_f32: V/last_hidden_state [B,T,H],
                    V/pooler_output [B,H], V/mlm_logits [B*T,vocab], V/nsp_logits [B,2],
                    V/cls_logits [B,3] (BertForSequenceClassification), V/reg_logits [B] (its
                    row 0 as a regression head), V/tok_logits [B*T,3] (BertForTokenClassification),
                    V/qa_logits [B*T,2] (start, end)
  <folder>/         config.json, vocab.txt, tokenizer_config.json and the weights (see make_all);
                    tf1_squad/ is an original TF1 run_squad.py checkpoint (tf_bundle_writer.py)
Exit status 77 when torch is missing (the caller skips).

With --forward-of DIR (a real HF folder) it instead writes --out (a .safetensors) holding the
float64 forward of that folder's weights on fixed inputs (for converter tests on real files).
"""
import argparse
import json
import os
import struct
import sys

try:
    import numpy as np
    import torch
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import BertModel, Heads, gelu  # noqa: E402
from tf_bundle_writer import write_bundle  # noqa: E402

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat",
         "run", "##s", "##ing", "##ed", "is", "was", "big", "small", ",", ".", "!", "?", "and", "or",
         "not", "un", "##able", "to", "of", "in", "it", "he", "she", "they", "we", "you", "i",
         "red", "blue", "green", "old"]
CONFIG = dict(vocab_size=len(VOCAB), hidden_size=36, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, hidden_act="gelu", max_position_embeddings=24, type_vocab_size=2,
              layer_norm_eps=1e-12, pad_token_id=0, initializer_range=0.02)
B, T, NUM_LABELS = 2, 9, 3
LABELS = ["negative", "neutral", "positive"]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ST_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
            torch.int64: "I64", torch.int32: "I32"}


class Full(torch.nn.Module):
    """Every head any test folder needs, sharing one encoder."""

    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = Heads(c)
        self.classifier = torch.nn.Linear(c["hidden_size"], NUM_LABELS)
        self.qa_outputs = torch.nn.Linear(c["hidden_size"], 2)
        self.act = c["hidden_act"]

    def forward(self, ids, tt, mask):
        h, pooled = self.bert(ids, tt, mask)
        rows = h.reshape(-1, h.shape[-1])
        t = self.cls.predictions.transform.LayerNorm(gelu(self.cls.predictions.transform.dense(rows), self.act))
        cls_logits = self.classifier(pooled)
        return {"last_hidden_state": h, "pooler_output": pooled,
                "mlm_logits": t @ self.bert.embeddings.word_embeddings.weight.t() + self.cls.predictions.bias,
                "nsp_logits": self.cls.seq_relationship(pooled), "cls_logits": cls_logits,
                "reg_logits": cls_logits[:, 0],  # st_regression keeps classifier row 0
                "tok_logits": self.classifier(rows), "qa_logits": self.qa_outputs(rows)}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """The format by hand (8-byte LE header length, JSON header, data), as the library writes it."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        n = t.numel() * t.element_size()
        header[name] = {"dtype": ST_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:  # one tensor at a time: the benchmark writes BERT-large with this
        f.write(struct.pack("<Q", len(h)) + h)
        for t in tensors.values():
            f.write(tensor_bytes(t))


def inputs():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, len(VOCAB), (B, T), generator=g)
    ids[:, 0] = 2
    tt = torch.zeros(B, T, dtype=torch.int64)
    tt[:, 5:] = 1
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[1, 6:] = 0
    ids[mask == 0] = 0
    return ids, tt, mask


def reference(weights, act):
    """float64 forward of `weights` (any dtype) with hidden_act `act`."""
    m = Full(dict(CONFIG, hidden_act=act))
    m.load_state_dict({k: v.double() for k, v in weights.items()})
    with torch.no_grad():
        return m(*inputs())


def select(weights, names):
    return {n: weights[n] for n in names}


def hf_folder(path, arch, tensors, fmt, extra_config=None, tokenizer_config=None, config_arch=True):
    os.makedirs(path, exist_ok=True)
    cfg = dict(CONFIG, model_type="bert", **(extra_config or {}))
    if config_arch:
        cfg["architectures"] = [arch]
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(path, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config or {"do_lower_case": True, "model_max_length": 24}, f)
    if fmt == "safetensors":
        write_safetensors(os.path.join(path, "model.safetensors"), tensors, {"format": "pt"})
    elif fmt in ("zip", "legacy"):
        torch.save(tensors, os.path.join(path, "pytorch_model.bin"),
                   _use_new_zipfile_serialization=(fmt == "zip"))
    elif fmt in ("safetensors-sharded", "zip-sharded"):
        names = list(tensors)
        half = len(names) // 2
        ext = "safetensors" if fmt == "safetensors-sharded" else "bin"
        stem = "model" if ext == "safetensors" else "pytorch_model"
        weight_map = {}
        for k, part in enumerate((names[:half], names[half:])):
            file = f"{stem}-0000{k + 1}-of-00002.{ext}"
            shard = {n: tensors[n] for n in part}
            if ext == "safetensors":
                write_safetensors(os.path.join(path, file), shard, {"format": "pt"})
            else:
                torch.save(shard, os.path.join(path, file))
            weight_map.update({n: file for n in part})
        total = sum(t.numel() * t.element_size() for t in tensors.values())
        with open(os.path.join(path, f"{stem}.{ext}.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def tf_name(hf):
    """load_tf_weights_in_bert read backwards: HF name → (original TF variable, transposed?)."""
    special = {"qa_outputs.weight": "cls/squad/output_weights", "qa_outputs.bias": "cls/squad/output_bias",
               "classifier.weight": "output_weights", "classifier.bias": "output_bias",
               "cls.predictions.bias": "cls/predictions/output_bias",
               "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
               "cls.seq_relationship.bias": "cls/seq_relationship/output_bias"}
    if hf in special:
        return special[hf], False  # output_weights are [out, in] already
    parts, out = hf.split("."), []
    while parts:
        p = parts.pop(0)
        out.append(f"layer_{parts.pop(0)}" if p == "layer" else p)
    if out[-2] == "LayerNorm":
        out[-1] = {"weight": "gamma", "bias": "beta"}[out[-1]]
    elif out[-2].endswith("_embeddings"):
        out.pop()
    elif out[-1] == "weight":
        out[-1] = "kernel"  # a Dense kernel is [in, out]
        return "/".join(out), True
    return "/".join(out), False


def tf1_folder(path, tensors):
    """An original-layout TF1 checkpoint folder (bert_config.json without layer_norm_eps, as
    Google's; hidden_act "gelu" = the tanh form), with optimizer slots and global_step as
    run_squad.py / run_classifier.py save them."""
    os.makedirs(path, exist_ok=True)
    cfg = {k: v for k, v in CONFIG.items() if k not in ("layer_norm_eps", "pad_token_id")}
    with open(os.path.join(path, "bert_config.json"), "w") as f:
        json.dump(dict(cfg, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1), f)
    with open(os.path.join(path, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True}, f)
    tf = {}
    for name, t in tensors.items():
        n, transpose = tf_name(name)
        a = t.float().numpy()
        tf[n] = a.T.copy() if transpose else a
        tf[n + "/adam_m"] = np.zeros_like(tf[n])
        tf[n + "/adam_v"] = np.zeros_like(tf[n])
    tf["global_step"] = np.array(1000, dtype=np.int64)
    write_bundle(os.path.join(path, "bert_model.ckpt"), tf)
    return tf


def make_all(out):
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float64)
    model = Full(CONFIG)
    with torch.no_grad():  # weights large enough that every path matters (as bert_reference.py)
        for name, p in model.named_parameters():
            p.copy_(1.0 + 0.2 * torch.randn_like(p) if "LayerNorm.weight" in name else 0.3 * torch.randn_like(p))
    base = {n: p.detach().float() for n, p in model.state_dict().items()}  # the f32 weights
    w = {k: {n: t.to(dt) for n, t in base.items()} for k, dt in DTYPES.items()}

    ref = {}
    ids, tt, mask = inputs()
    ref.update({"input/input_ids": ids, "input/token_type_ids": tt, "input/attention_mask": mask})
    for variant, (act, prec) in {"gelu_f32": ("gelu", "f32"), "gelu_f16": ("gelu", "f16"),
                                 "gelu_bf16": ("gelu", "bf16"), "gelu_new_f32": ("gelu_new", "f32")}.items():
        for k, v in reference(w[prec], act).items():
            ref[f"{variant}/{k}"] = v
    write_safetensors(os.path.join(out, "ref.safetensors"), ref)

    names = list(base)
    encoder = [n for n in names if n.startswith("bert.") and not n.startswith("bert.pooler.")]
    pooler = [n for n in names if n.startswith("bert.pooler.")]
    mlm = [n for n in names if n.startswith("cls.predictions.")]
    nsp = [n for n in names if n.startswith("cls.seq_relationship.")]
    pretraining = encoder + pooler + mlm + nsp
    for prec in DTYPES:  # transformers >= 4.31 safetensors: no position_ids, no decoder (tied)
        hf_folder(f"{out}/st_pretraining_{prec}", "BertForPreTraining", select(w[prec], pretraining), "safetensors")
    hf_folder(f"{out}/st_sharded", "BertForPreTraining", select(w["f32"], pretraining), "safetensors-sharded")
    hf_folder(f"{out}/st_gelu_pytorch_tanh", "BertForPreTraining", select(w["f32"], pretraining), "safetensors",
              {"hidden_act": "gelu_pytorch_tanh"})
    hf_folder(f"{out}/st_seqcls", "BertForSequenceClassification",
              select(w["f32"], encoder + pooler + ["classifier.weight", "classifier.bias"]), "safetensors",
              # id2label written out of id order: labels must come back ordered by id
              {"id2label": {"2": LABELS[2], "0": LABELS[0], "1": LABELS[1]},
               "label2id": {l: i for i, l in enumerate(LABELS)}, "finetuning_task": "sst3"})
    hf_folder(f"{out}/st_regression", "BertForSequenceClassification",
              dict(select(w["f32"], encoder + pooler), **{"classifier.weight": w["f32"]["classifier.weight"][:1],
                                                          "classifier.bias": w["f32"]["classifier.bias"][:1]}),
              "safetensors", {"id2label": {"0": "score"}, "problem_type": "regression", "finetuning_task": "stsb"})
    hf_folder(f"{out}/st_tokcls", "BertForTokenClassification",
              select(w["f32"], encoder + ["classifier.weight", "classifier.bias"]), "safetensors",
              {"id2label": {str(i): l for i, l in enumerate(["O", "B-PER", "I-PER"])}})
    hf_folder(f"{out}/st_qa", "BertForQuestionAnswering",
              select(w["f32"], encoder + ["qa_outputs.weight", "qa_outputs.bias"]), "safetensors")
    # config.json says BertForPreTraining, the weights lack the NSP head (transformers loads it
    # with a warning and a random cls.seq_relationship).
    hf_folder(f"{out}/st_pretraining_no_nsp", "BertForPreTraining", select(w["f32"], encoder + pooler + mlm),
              "safetensors")
    # run_squad.py's checkpoint: the encoder, the pooler and cls/squad/output_weights [2, H],
    # output_bias [2]. Its reference is gelu_new_f32/qa_logits (the same f32 weights, tanh GELU).
    tf = tf1_folder(f"{out}/tf1_squad", select(w["f32"], encoder + pooler + ["qa_outputs.weight", "qa_outputs.bias"]))
    # run_squad.py's create_model on those arrays: logits = final_hidden · output_weightsᵀ + bias,
    # start = [..., 0], end = [..., 1]; it must give the reference's qa_logits.
    h = ref["gelu_new_f32/last_hidden_state"].reshape(B * T, -1).numpy()
    logits = h @ tf["cls/squad/output_weights"].astype(np.float64).T + tf["cls/squad/output_bias"]
    assert np.allclose(logits, ref["gelu_new_f32/qa_logits"].numpy(), rtol=1e-12, atol=1e-12)
    # Two fine-tuning heads (run_classifier.py's output_weights and run_squad.py's): refused.
    tf1_folder(f"{out}/tf1_two_heads", select(w["f32"], encoder + pooler + ["qa_outputs.weight", "qa_outputs.bias",
                                                                           "classifier.weight", "classifier.bias"]))

    # transformers < 4.31 .bin files: the position_ids buffer, the tied decoder weight and
    # decoder.bias saved as shared storages (torch.save keeps the sharing).
    sd = select(w["f32"], encoder + mlm)
    sd["bert.embeddings.position_ids"] = torch.arange(CONFIG["max_position_embeddings"]).unsqueeze(0)
    sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"]
    sd["cls.predictions.decoder.bias"] = sd["cls.predictions.bias"]
    hf_folder(f"{out}/bin_zip_mlm", "BertForMaskedLM", sd, "zip")
    bad = dict(sd)
    bad["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"].clone()
    bad["cls.predictions.decoder.weight"][7, 3] += 0.5
    hf_folder(f"{out}/bad_decoder", "BertForMaskedLM", bad, "zip")
    hf_folder(f"{out}/bin_zip_f16", "BertForPreTraining", select(w["f16"], pretraining), "zip")
    hf_folder(f"{out}/bin_sharded", "BertForPreTraining", select(w["f32"], pretraining), "zip-sharded")
    # Old BertModel files: bare names, TF-style LayerNorm.gamma/beta, legacy pickle, no architectures.
    bare = {}
    for n in encoder + pooler:
        k = n[len("bert."):].replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        bare[k] = w["f32"][n]
    hf_folder(f"{out}/bin_legacy_bare", "BertModel", bare, "legacy", config_arch=False,
              tokenizer_config={"do_lower_case": False, "strip_accents": True, "tokenize_chinese_chars": False})


def load_folder(path):
    """A real HF folder's state dict (safetensors by hand, or torch.load), names canonical."""
    st = os.path.join(path, "model.safetensors")
    if os.path.exists(st):
        with open(st, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header, data = json.loads(f.read(n)), f.read()
        types = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}
        sd = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            sd[name] = torch.frombuffer(bytearray(data[b:e]), dtype=types[info["dtype"]]).reshape(info["shape"])
    else:
        sd = torch.load(os.path.join(path, "pytorch_model.bin"), map_location="cpu")
    out = {}
    for k, v in sd.items():
        k = k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        if k.startswith(("embeddings.", "encoder.", "pooler.")):
            k = "bert." + k
        out[k] = v
    return out


def forward_of(folder, out):
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    c = {k: c.get(k, d) for k, d in dict(CONFIG, layer_norm_eps=1e-12, pad_token_id=0).items()}
    sd = load_folder(folder)
    torch.set_default_dtype(torch.float64)
    m = BertModel(c)
    enc = {k[len("bert."):]: v.double() for k, v in sd.items()
           if k.startswith("bert.") and k not in ("bert.embeddings.position_ids",) and not k.startswith("bert.pooler.")}
    m.load_state_dict(enc, strict=False)
    missing = set(m.state_dict()) - set(enc)
    assert missing <= {"pooler.dense.weight", "pooler.dense.bias"}, missing
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, c["vocab_size"], (2, 7), generator=g)
    tt = torch.zeros_like(ids)
    tt[:, 4:] = 1
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    with torch.no_grad():
        h, _ = m(ids, tt, mask)
    write_safetensors(out, {"input/input_ids": ids, "input/token_type_ids": tt, "input/attention_mask": mask,
                            "last_hidden_state": h})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--forward-of", help="a real HF folder: write its float64 forward to --out")
    args = ap.parse_args()
    if args.forward_of:
        forward_of(args.forward_of, args.out)
    else:
        os.makedirs(args.out, exist_ok=True)
        make_all(args.out)


if __name__ == "__main__":
    main()
