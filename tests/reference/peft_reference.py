#!/usr/bin/env python3
"""LoRA adapters against Hugging Face PEFT itself.

  peft_reference.py --write-case DIR
      NumPy and torch only, so a test can run it: writes DIR/base/ (a tiny
      BertForSequenceClassification folder: config.json, vocab.txt, tokenizer_config.json,
      pytorch_model.bin), one PEFT LoRA folder per variant, DIR/<variant>/ (adapter_config.json
      and adapter_model.safetensors as PeftModel.save_pretrained writes them: the names of
      get_peft_model_state_dict, the classifier as a module to save), and DIR/case.json (the
      batch: input ids, token types, attention mask, labels). The weights come from NumPy's
      RandomState, whose stream does not change between releases. Variants:
        list   target_modules ["query", "value", "dense"] (dense: the attention output's, the
               feed-forward's two and the pooler's), r 4, lora_alpha 8
        regex  target_modules as a regex string matched in full, r 3, lora_alpha 5
  peft_reference.py --upstream --case DIR --out tests/reference/expected/peft_lora.json
                    [--source peft=COMMIT ...]
      With transformers and peft importable: loads DIR/base with
      BertForSequenceClassification.from_pretrained and each variant with
      PeftModel.from_pretrained(is_trainable=True), and writes, per variant, the float32 logits
      with the adapter, the logits after merge_and_unload(), and (variant list) the cross-entropy
      loss of the batch's labels (mean over the batch) and the gradient of every trainable tensor
      (lora_A, lora_B, the classifier), named as bertrt names them; also the sum of each adapter
      tensor, so a test can tell a different draw of the weights from a wrong computation.
  peft_reference.py --round-trip --cli BIN --convert BIN --work DIR
      bertrt's own adapter out to PEFT: `bertrt finetune --lora-r` trains an adapter on the
      converted base, `bertrt predict --adapter` scores texts, `bertrt-convert --to peft` and
      `--to hf` export the adapter and the base, and upstream PEFT loads them
      (PeftModel.from_pretrained over from_pretrained of the exported base) and must give the
      same probabilities. Also: `bertrt predict --adapter DIR/list` (the PEFT folder read
      directly) against upstream's logits of the same texts.

transformers (4.34 and later) and peft import the `safetensors` package, which is Rust and not in
Debian: with st_upstream.py's import-only stand-in on the path, each .safetensors file is
rewritten as the .bin holding the same tensors in a temporary copy of the folder (by hand, no
arithmetic), which both libraries then read with torch.load. BERTRT_PEFT_PYTHONPATH (folders, as
PYTHONPATH) is put on the path before they are imported. Exit status 77 when torch (or, for
--upstream and --round-trip, peft) is missing.
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError:
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_hf_models import CONFIG, VOCAB, write_safetensors  # noqa: E402

SEED = 5501
LABELS = 2  # sst2's: `bertrt predict --task sst2` reads a head of two by index
VARIANTS = {
    "list": dict(r=4, lora_alpha=8, target_modules=["query", "value", "dense"]),
    # full match: every layer's key and the feed-forward's first Linear
    "regex": dict(r=3, lora_alpha=5, target_modules=r"bert\.encoder\.layer\.\d+\.(attention\.self\.key|intermediate\.dense)"),
}
TEXTS = ["the cat sat on the mat .", "a big dog was not able to run !", "she and he run to it",
         "red , blue or green ?"]


def linears():
    """(name, out, in) of every Linear of BertForSequenceClassification but the classifier."""
    H, I = CONFIG["hidden_size"], CONFIG["intermediate_size"]
    out = []
    for l in range(CONFIG["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        out += [(p + "attention.self.query", H, H), (p + "attention.self.key", H, H),
                (p + "attention.self.value", H, H), (p + "attention.output.dense", H, H),
                (p + "intermediate.dense", I, H), (p + "output.dense", H, I)]
    return out + [("bert.pooler.dense", H, H)]


def base_weights(rs):
    H, I, V = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["vocab_size"]
    f = lambda *shape, s=0.1: torch.from_numpy((s * rs.standard_normal(shape)).astype(np.float32))
    w = {"bert.embeddings.word_embeddings.weight": f(V, H, s=0.5),
         "bert.embeddings.position_embeddings.weight": f(CONFIG["max_position_embeddings"], H, s=0.5),
         "bert.embeddings.token_type_embeddings.weight": f(2, H, s=0.5),
         "bert.embeddings.LayerNorm.weight": 1 + f(H), "bert.embeddings.LayerNorm.bias": f(H)}
    for name, o, i in linears():
        w[name + ".weight"] = f(o, i, s=i ** -0.5)
        w[name + ".bias"] = f(o)
    for l in range(CONFIG["num_hidden_layers"]):
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"bert.encoder.layer.{l}.{ln}.weight"] = 1 + f(H)
            w[f"bert.encoder.layer.{l}.{ln}.bias"] = f(H)
    w["classifier.weight"] = f(LABELS, H, s=0.3)
    w["classifier.bias"] = f(LABELS)
    return w


def matches(name, targets):
    """peft.tuners.tuners_utils.check_target_module_exists."""
    if isinstance(targets, str):
        import re
        return re.fullmatch(targets, name) is not None
    return any(name == t or name.endswith("." + t) for t in targets)


def adapter_weights(rs, v):
    """The adapter's tensors under the names PEFT saves (B drawn too: a trained adapter)."""
    H, r = CONFIG["hidden_size"], v["r"]
    f = lambda *shape, s: torch.from_numpy((s * rs.standard_normal(shape)).astype(np.float32))
    out = {}
    for name, o, i in linears():
        if matches(name, v["target_modules"]):
            out[f"base_model.model.{name}.lora_A.weight"] = f(r, i, s=i ** -0.5)
            out[f"base_model.model.{name}.lora_B.weight"] = f(o, r, s=0.2)
    out["base_model.model.classifier.weight"] = f(LABELS, H, s=0.3)
    out["base_model.model.classifier.bias"] = f(LABELS, s=0.3)
    return out


def adapter_config(v):
    """adapter_config.json as peft 0.11's save_pretrained writes it for a SEQ_CLS LoraConfig."""
    return {"alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "base", "bias": "none",
            "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
            "layer_replication": None, "layers_pattern": None, "layers_to_transform": None,
            "loftq_config": {}, "lora_alpha": v["lora_alpha"], "lora_dropout": 0.0, "megatron_config": None,
            "megatron_core": "megatron.core", "modules_to_save": ["classifier", "score"], "peft_type": "LORA",
            "r": v["r"], "rank_pattern": {}, "revision": None, "target_modules": v["target_modules"],
            "task_type": "SEQ_CLS", "use_dora": False, "use_rslora": False}


def batch():
    rs = np.random.RandomState(SEED + 7)
    B, T = 3, 10
    ids = rs.randint(5, len(VOCAB), size=(B, T))
    ids[:, 0] = 2
    ids[:, 5] = 3
    ids[:, T - 1] = 3
    tt = np.zeros((B, T), dtype=np.int64)
    tt[:, 6:] = 1
    mask = np.ones((B, T), dtype=np.int64)
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    ids[2, 3] = 3
    return {"input_ids": ids.tolist(), "token_type_ids": tt.tolist(), "attention_mask": mask.tolist(),
            "labels": [1, 0, 1]}


def dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def write_case(out):
    rs = np.random.RandomState(SEED)
    base = os.path.join(out, "base")
    os.makedirs(base, exist_ok=True)
    cfg = dict(CONFIG, architectures=["BertForSequenceClassification"], model_type="bert",
               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, torch_dtype="float32",
               id2label={str(i): f"LABEL_{i}" for i in range(LABELS)},
               label2id={f"LABEL_{i}": i for i in range(LABELS)})
    dump(os.path.join(base, "config.json"), cfg)
    with open(os.path.join(base, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in VOCAB))
    dump(os.path.join(base, "tokenizer_config.json"),
         {"do_lower_case": True, "model_max_length": CONFIG["max_position_embeddings"],
          "tokenizer_class": "BertTokenizer"})
    torch.save(base_weights(rs), os.path.join(base, "pytorch_model.bin"))
    for name, v in VARIANTS.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        dump(os.path.join(d, "adapter_config.json"), adapter_config(v))
        write_safetensors(os.path.join(d, "adapter_model.safetensors"), adapter_weights(rs, v), {"format": "pt"})
    dump(os.path.join(out, "case.json"), batch())


# --- upstream ------------------------------------------------------------------------------------

def import_upstream():
    # The install's folders (site packages, the safetensors stand-in), given to ctest this way.
    for path in reversed(os.environ.get("BERTRT_PEFT_PYTHONPATH", "").split(os.pathsep)):
        if path:
            sys.path.insert(0, path)
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
        from transformers import tokenization_utils_base
        from transformers.utils import is_tokenizers_available
        if not is_tokenizers_available():  # as st_upstream.py: the stand-in AddedToken
            tokenization_utils_base.AddedToken.__hash__ = lambda self: hash(self.content)
            tokenization_utils_base.AddedToken.__setstate__ = lambda self, state: self.__dict__.update(state)
    except ImportError as e:
        print(f"peft_reference.py: {e}", file=sys.stderr)
        sys.exit(77)


def read_safetensors(path):
    """The format by hand: 8-byte little-endian header length, JSON header, then the data."""
    types = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header, data = json.loads(f.read(n)), f.read()
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            b, e = info["data_offsets"]
            out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=types[info["dtype"]]).reshape(info["shape"])
    return out


def readable_copy(folder, tmp):
    """A copy of `folder` with each .safetensors rewritten as the .bin the libraries fall back to."""
    dst = os.path.join(tmp, os.path.basename(os.path.normpath(folder)))
    shutil.copytree(folder, dst)
    for stem, bin_name in (("model", "pytorch_model.bin"), ("adapter_model", "adapter_model.bin")):
        p = os.path.join(dst, stem + ".safetensors")
        if os.path.exists(p):
            torch.save(read_safetensors(p), os.path.join(dst, bin_name))
            os.remove(p)
    return dst


def load_peft(base_dir, adapter_dir, trainable=False):
    from peft import PeftModel
    from transformers import BertForSequenceClassification
    base = BertForSequenceClassification.from_pretrained(base_dir)
    model = PeftModel.from_pretrained(base, adapter_dir, is_trainable=trainable)
    return model.float()


def f32(values):
    """float32 values as the shortest decimals that read back to the same float32."""
    out = []
    for x in np.asarray(values, dtype=np.float32).ravel():
        d = float(repr(x))
        assert np.float32(d) == x, (x, d)
        out.append(d)
    return out


def bertrt_name(peft_param):
    """base_model.model.X.lora_A.default.weight → X.lora_A.weight; the module to save likewise."""
    n = peft_param[len("base_model.model."):]
    return n.replace(".modules_to_save.default", "").replace(".default", "")


def upstream(case, out, sources):
    import_upstream()
    import peft
    import transformers
    with open(os.path.join(case, "case.json")) as f:
        b = json.load(f)
    ids, tt, mask = (torch.tensor(b[k]) for k in ("input_ids", "token_type_ids", "attention_mask"))
    labels = torch.tensor(b["labels"])
    result = {"about": "tests/reference/peft_reference.py --upstream: outputs of Hugging Face PEFT on "
                       "the folders --write-case makes; compared by tests/unit/peft_reference_test.cpp",
              "versions": {"peft": peft.__version__, "transformers": transformers.__version__,
                           "torch": torch.__version__, "numpy": np.__version__},
              "sources": sources, "case": b, "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = readable_copy(os.path.join(case, "base"), tmp)
        for name in VARIANTS:
            adapter = readable_copy(os.path.join(case, name), tmp)
            sums = {bertrt_name(k): float(v.double().sum())
                    for k, v in read_safetensors(os.path.join(case, name, "adapter_model.safetensors")).items()}
            model = load_peft(base, adapter, trainable=True)
            model.train()  # dropout is 0 everywhere: train mode computes what eval does
            o = model(input_ids=ids, token_type_ids=tt, attention_mask=mask, labels=labels)
            o.loss.backward()
            v = {"adapter_sums": sums, "logits": [f32(r) for r in o.logits.detach()], "loss": f32([o.loss.item()])[0]}
            if name == "list":
                v["gradients"] = {bertrt_name(k): f32(p.grad) for k, p in model.named_parameters()
                                  if p.requires_grad}
            model.eval()
            merged = model.merge_and_unload()
            with torch.no_grad():
                m = merged(input_ids=ids, token_type_ids=tt, attention_mask=mask).logits
            v["merged_logits"] = [f32(r) for r in m]
            result["variants"][name] = v
    dump(out, result)
    print(f"wrote {out}")


# --- round trip ----------------------------------------------------------------------------------

def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def upstream_probabilities(base_dir, adapter_dir, tmp, labels_of):
    """softmax of PEFT's logits for TEXTS, tokenized by transformers' BertTokenizer."""
    from transformers import BertTokenizer
    tok = BertTokenizer(os.path.join(base_dir, "vocab.txt"), do_lower_case=True)
    model = load_peft(readable_copy(base_dir, tmp), readable_copy(adapter_dir, tmp)).eval()
    enc = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits
    return [dict(zip(labels_of, r)) for r in torch.softmax(logits.double(), -1).tolist()]


def compare(got, want, what, tol):
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        for k in w:
            worst = max(worst, abs(g[k] - w[k]))
    if len(got) != len(want) or worst > tol:
        raise SystemExit(f"FAIL: {what}: probabilities differ by {worst:.3g} (bound {tol})\n"
                         f"  bertrt   {got}\n  upstream {want}")
    print(f"ok: {what}: largest difference {worst:.2g}")


def round_trip(cli, convert, work):
    import_upstream()
    os.makedirs(work, exist_ok=True)
    write_case(os.path.join(work, "case"))
    case = os.path.join(work, "case")
    base_brt = os.path.join(work, "base.brt")
    run([convert, "-q", os.path.join(case, "base"), "-o", base_brt])
    texts = os.path.join(work, "texts.txt")
    with open(texts, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in TEXTS))

    def predict(adapter, task):
        out = run([cli, "predict", "--model", base_brt, "--adapter", adapter, "--task", task, "--input",
                   texts, "--json"], env=dict(os.environ, BERTRT_NUM_THREADS="1"))
        return [json.loads(line)["probabilities"] for line in out.splitlines()]

    # 1. A PEFT folder read by bertrt.
    with tempfile.TemporaryDirectory() as tmp:
        want = upstream_probabilities(os.path.join(case, "base"), os.path.join(case, "list"), tmp, ["negative", "positive"])
    # The head's LABEL_0, LABEL_1 are sst2's 0, 1 by index, as for a converted checkpoint.
    compare(predict(os.path.join(case, "list"), "sst2"), want, "predict --adapter PEFT folder", TOL)

    # 2. bertrt's adapter out to PEFT.
    train = os.path.join(work, "train.tsv")
    rs = np.random.RandomState(SEED + 11)
    words = VOCAB[5:]
    with open(train, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        for i in range(24):
            f.write(" ".join(rs.choice(words, size=6)) + f"\t{i % 2}\n")
    adapter = os.path.join(work, "sst2-lora.brt")
    run([cli, "finetune", "--model", base_brt, "--task", "sst2", "--train", train, "--epochs", "1",
         "--batch-size", "8", "--learning-rate", "1e-2", "--lora-r", "4", "--lora-alpha", "8",
         "--lora-target", "query,value,dense", "--max-seq-length", "16", "-o", adapter],
        env=dict(os.environ, BERTRT_NUM_THREADS="1"))
    got = predict(adapter, "sst2")
    peft_dir, hf_dir = os.path.join(work, "peft"), os.path.join(work, "hf")
    run([convert, "-q", "--to", "peft", adapter, "-o", peft_dir])
    run([convert, "-q", "--to", "hf", base_brt, "-o", hf_dir])
    with tempfile.TemporaryDirectory() as tmp:
        want = upstream_probabilities(hf_dir, peft_dir, tmp, ["negative", "positive"])
    compare(got, want, "--to peft loaded by PeftModel.from_pretrained", TOL)


# Both sides are float32 over two 36-wide layers (sums of at most 37 products) plus the adapters'
# rank-4 products; probabilities lie in [0, 1]: 2e-5 is the chain's worst case (st_check.py's
# bound), and a mistake (a missed scaling, a wrong target) moves them by 1e-2 and more.
TOL = 2e-5


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-case")
    ap.add_argument("--upstream", action="store_true")
    ap.add_argument("--case")
    ap.add_argument("--out")
    ap.add_argument("--source", action="append", default=[], help="NAME=COMMIT, recorded in the file")
    ap.add_argument("--round-trip", action="store_true")
    ap.add_argument("--cli")
    ap.add_argument("--convert")
    ap.add_argument("--work")
    a = ap.parse_args()
    if a.write_case:
        write_case(a.write_case)
    elif a.upstream:
        upstream(a.case, a.out, dict(s.split("=", 1) for s in a.source))
    elif a.round_trip:
        round_trip(a.cli, a.convert, a.work)
    else:
        ap.error("one of --write-case, --upstream, --round-trip")


if __name__ == "__main__":
    main()
