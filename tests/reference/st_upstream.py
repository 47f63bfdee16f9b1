#!/usr/bin/env python3
"""Expected outputs of st_models.py's folders, computed by the sentence-transformers library itself.

  st_upstream.py --models DIR --out tests/reference/expected/sentence_transformers.json \\
      [--source sentence-transformers=COMMIT ...]
      Loads every folder of DIR/cases.json with SentenceTransformer(path, device="cpu") or
      CrossEncoder(path) and writes, per variant and case, encode()'s float32 embeddings (or
      predict()'s scores), the input ids the library's tokenizer produced for each text, and the
      versions (and, given --source, the commits) of the libraries that ran.
  st_upstream.py --check-folder DIR --against VARIANT [--expected JSON] [--tolerance T]
      Loads DIR (for example bertrt-convert --to sentence-transformers output) the same way, runs
      VARIANT's cases on the JSON's inputs and prints the largest absolute difference from the
      expected values, and any input ids that differ. Exit status 1 if a difference exceeds T.

Run it with the library on the path (sentence-transformers, transformers, huggingface_hub and
Debian's torch, numpy, scipy, scikit-learn, tqdm, regex, requests, filelock, yaml); it is not part
of the test suite. Two accommodations, neither touching the arithmetic:
  - The slow Python BertTokenizer is always used (use_fast=False, passed through the loader's own
    tokenizer_args of a temporary copy of the folder), so the ids do not depend on whether the
    Rust `tokenizers` package is installed. The two differ on one case here: cutting a pair whose
    two sides are both long (see st_models.py's PAIRS).
  - Where the `safetensors` package cannot read (it is Rust too), each model.safetensors of the
    copy is rewritten as the pytorch_model.bin holding the same tensors (read_safetensors below).
  - Without `tokenizers`, transformers' stand-in AddedToken class (tokenization_utils_base.py)
    lacks __hash__ and __setstate__, which the slow tokenizer's constructor calls; they are given
    the meaning tokenizers.AddedToken has (hash of the content, update of the attributes).
  st_upstream.py --write-stand-in DIR
      Writes an import-only `safetensors` package into DIR, for where the real one cannot be
      installed: transformers (4.34 and later) requires and imports it even when it reads only
      pytorch_model.bin. Its readers and writers raise, so nothing it could do reaches a value.
Exit status 77 when the library is missing.
"""
import argparse
import inspect
import json
import os
import shutil
import struct
import sys
import tempfile

np = torch = transformers = sentence_transformers = CrossEncoder = SentenceTransformer = None


def import_library():
    global np, torch, transformers, sentence_transformers, CrossEncoder, SentenceTransformer
    try:
        import numpy as np
        import torch
        import transformers
        from transformers import tokenization_utils_base
        from transformers.utils import is_tokenizers_available
        if not is_tokenizers_available():
            tokenization_utils_base.AddedToken.__hash__ = lambda self: hash(self.content)
            tokenization_utils_base.AddedToken.__setstate__ = lambda self, state: self.__dict__.update(state)
        import sentence_transformers
        from sentence_transformers import CrossEncoder, SentenceTransformer
    except ImportError as e:
        print(f"st_upstream.py: {e}", file=sys.stderr)
        sys.exit(77)


STAND_IN_VERSION = "0.4.5"  # satisfies transformers' "safetensors>=0.4.1" check
STAND_IN = {
    "safetensors/__init__.py": '''"""Import-only stand-in for the safetensors package (written by st_upstream.py)."""
__version__ = "%s"


class SafetensorError(Exception):
    pass


def _absent(*args, **kwargs):
    raise RuntimeError("safetensors stand-in: cannot read or write .safetensors files")


safe_open = deserialize = serialize = serialize_file = _absent
''' % STAND_IN_VERSION,
    "safetensors/torch.py": '''import torch

from . import _absent

load_file = save_file = load_model = save_model = load = save = _absent


def storage_ptr(tensor: torch.Tensor) -> int:  # save_pretrained's shared-tensor check
    return tensor.storage().data_ptr()


def storage_size(tensor: torch.Tensor) -> int:
    return tensor.storage().size() * tensor.element_size()
''',
    f"safetensors-{STAND_IN_VERSION}.dist-info/METADATA":
        f"Metadata-Version: 2.1\nName: safetensors\nVersion: {STAND_IN_VERSION}\n",
}


def write_stand_in(folder):
    for rel, text in STAND_IN.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote an import-only safetensors {STAND_IN_VERSION} into {folder}")


HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_EXPECTED = os.path.join(HERE, "expected", "sentence_transformers.json")
IDENTITY = "torch.nn.modules.linear.Identity"


def f32(values):
    """float32 values as the shortest decimals that read back to the same float32."""
    out = []
    for x in np.asarray(values, dtype=np.float32).ravel():
        d = float(repr(x))
        assert np.float32(d) == x, (x, d)
        out.append(d)
    return out


def rows(matrix):
    m = np.asarray(matrix, dtype=np.float32)
    return [f32(r) for r in m.reshape(m.shape[0], -1)]


def read_safetensors(path):
    """The format by hand: 8-byte little-endian header length, JSON header, then the data."""
    types = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
             "I64": torch.int64, "I32": torch.int32}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header, data = json.loads(f.read(n)), f.read()
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            b, e = info["data_offsets"]
            out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=types[info["dtype"]]).reshape(info["shape"])
    return out


def safetensors_readable(path):
    try:
        from safetensors.torch import load_file
        load_file(path)
        return True
    except Exception:
        return False


def loadable_copy(folder, tmp):
    """A copy of folder whose Transformer module asks for the slow tokenizer."""
    dst = os.path.join(tmp, os.path.basename(os.path.normpath(folder)))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(folder, dst)
    for root, _, files in os.walk(dst):
        if "model.safetensors" in files and not safetensors_readable(os.path.join(root, "model.safetensors")):
            tensors = read_safetensors(os.path.join(root, "model.safetensors"))
            torch.save(tensors, os.path.join(root, "pytorch_model.bin"))
            os.remove(os.path.join(root, "model.safetensors"))
    cfg_path = os.path.join(dst, "sentence_bert_config.json")
    if os.path.exists(cfg_path):
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)
        cfg.setdefault("tokenizer_args", {})["use_fast"] = False
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
    return dst


def kwarg_name(fn, *names):
    """The first of names that fn accepts (the API renamed arguments between releases)."""
    params = inspect.signature(fn).parameters
    for n in names:
        if n in params:
            return n
    raise TypeError(f"{fn.__qualname__} accepts none of {names}")


def load_st(folder, truncate_dim, cache):
    key = (folder, truncate_dim)
    if key not in cache:
        cache[key] = SentenceTransformer(folder, device="cpu", truncate_dim=truncate_dim)
    return cache[key]


class PromptLength:
    """Records the prompt_length feature encode() hands to the Pooling module."""

    def __init__(self, model):
        self.seen = []
        pooling = [m for m in model if type(m).__name__ == "Pooling"]
        self.handle = pooling[0].register_forward_pre_hook(self.hook) if pooling else None

    def hook(self, module, args):
        self.seen.append(args[0].get("prompt_length"))

    def close(self):
        if self.handle:
            self.handle.remove()


def run_st_case(model, case, sentences):
    kwargs = dict(case.get("encode", {}))
    recorder = PromptLength(model)
    try:
        emb = model.encode(sentences, convert_to_numpy=True, show_progress_bar=False, **kwargs)
    finally:
        recorder.close()
    prompt = kwargs.get("prompt")
    if prompt is None and kwargs.get("prompt_name"):
        prompt = model.prompts[kwargs["prompt_name"]]
    texts = [(prompt or "") + s for s in sentences]
    ids = [model.tokenize([t])["input_ids"][0].tolist() for t in texts]
    lengths = {int(p) if isinstance(p, (int, torch.Tensor)) else p for p in recorder.seen}
    return emb, ids, prompt, lengths


def cross_encoder(folder):
    tok = kwarg_name(CrossEncoder.__init__, "tokenizer_kwargs", "tokenizer_args")
    return CrossEncoder(folder, device="cpu", **{tok: {"use_fast": False}})


def ce_features(ce, pair):
    """The features predict() feeds the model for one pair, by the library's own code path."""
    if hasattr(ce, "smart_batching_collate_text_only"):  # sentence-transformers < 4
        return ce.smart_batching_collate_text_only([pair])
    return ce.tokenizer([pair], padding=True, truncation=True, return_tensors="pt")


def run_ce_case(ce, case, pairs):
    args = dict(case.get("predict", {}))
    kwargs = {}
    if "activation_fn" in args:
        act = args["activation_fn"]
        assert act == IDENTITY, act
        kwargs[kwarg_name(ce.predict, "activation_fn", "activation_fct")] = torch.nn.Identity()
    return np.asarray(ce.predict(pairs, show_progress_bar=False, **kwargs), dtype=np.float32)


def compute(models_dir):
    with open(os.path.join(models_dir, "cases.json"), encoding="utf-8") as f:
        spec = json.load(f)
    sentences, pairs = spec["sentences"], spec["pairs"]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = {}
        for name, v in spec["variants"].items():
            folder = loadable_copy(os.path.join(models_dir, v["folder"]), tmp)
            entry = {"kind": v["kind"], "folder": v["folder"]}
            if v["kind"] == "CrossEncoder":
                # predict() with an activation_fn keeps it (sentence-transformers 4+): one model per case
                cases = {}
                for case in v["cases"]:
                    ce = cross_encoder(folder)
                    scores = f32(run_ce_case(ce, case, pairs))
                    cases[case["id"]] = {"predict": case.get("predict", {}), "scores": scores}
                feats = [ce_features(ce, p) for p in pairs]
                entry.update(max_length=int(ce.tokenizer.model_max_length) if ce.max_length is None else ce.max_length,
                             input_ids=[x["input_ids"][0].tolist() for x in feats],
                             token_type_ids=[x["token_type_ids"][0].tolist() for x in feats], cases=cases)
            else:
                cases = {}
                for case in v["cases"]:
                    model = load_st(folder, case.get("truncate_dim"), cache)
                    emb, ids, prompt, lengths = run_st_case(model, case, sentences)
                    c = {"encode": case.get("encode", {})}
                    if case.get("truncate_dim"):
                        c["truncate_dim"] = case["truncate_dim"]
                    if prompt is not None:
                        assert len(lengths) == 1, lengths
                        c.update(prompt=prompt, prompt_length=lengths.pop(), input_ids=ids)
                    else:
                        entry.setdefault("input_ids", ids)
                        assert ids == entry["input_ids"]
                    c["embeddings"] = rows(emb)
                    cases[case["id"]] = c
                model = load_st(folder, None, cache)
                entry.update(dimension=int(model.get_sentence_embedding_dimension()),
                             max_seq_length=int(model.max_seq_length), prompts=dict(model.prompts))
                entry["cases"] = cases
                order = ["kind", "folder", "dimension", "max_seq_length", "prompts", "input_ids", "cases"]
                entry = {k: entry[k] for k in order if k in entry}
            out[name] = entry
    return spec, out


def dumps(obj, indent=0):
    """JSON with every list of numbers on one line (one embedding a line)."""
    pad = " " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f'{pad}  {json.dumps(k)}: {dumps(v, indent + 2)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(obj, list) and obj and all(isinstance(x, (list, dict)) for x in obj):
        return "[\n" + ",\n".join(f"{pad}  {dumps(x, indent + 2)}" for x in obj) + f"\n{pad}]"
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":") if isinstance(obj, list) else (", ", ": "))


def upstream(source_args):
    """The versions that ran, and the source commits given as NAME=COMMIT."""
    return {
        "sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
        "huggingface_hub": __import__("huggingface_hub").__version__, "torch": torch.__version__,
        "numpy": np.__version__, "sources": dict(s.split("=", 1) for s in source_args),
        "tokenizer": "transformers' slow BertTokenizer (use_fast=False)",
    }


def write_json(path, doc, what):
    """dumps(doc) to path through a temporary file, so a failed run leaves the old file."""
    text = dumps(doc) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"wrote {path} ({len(text)} bytes, {what})")


def write_expected(args):
    spec, variants = compute(args.models)
    doc = {
        "description": "Outputs of the sentence-transformers library on the folders tests/reference/st_models.py "
                       "writes (float32, as the shortest decimals that read back to the same float32).",
        "upstream": upstream(args.source),
        "semantics": {
            "encode": "SentenceTransformer(folder, device='cpu', truncate_dim=case.truncate_dim)"
                      ".encode(sentences, **case.encode); sentences are batched together (padded to the longest)",
            "order": "the modules (Transformer, Pooling, Dense..., Normalize), then truncate_dim keeps the first D "
                     "values, then normalize_embeddings divides by max(L2 norm, 1e-12): a truncated output of a "
                     "model with a Normalize module is not unit length unless normalize_embeddings is also set",
            "prompt": "the prompt string is prepended to each sentence before tokenization; prompt_length (the "
                      "prompt's own token count with [CLS], without the final [SEP]) is masked out of pooling "
                      "when include_prompt is false",
            "predict": "CrossEncoder(folder).predict(pairs): scores = sigmoid(logit) for one label by default; "
                       "activation_fn Identity gives the raw logit",
        },
        "sentences": spec["sentences"],
        "pairs": spec["pairs"],
        "variants": variants,
    }
    write_json(args.out, doc, f"{len(variants)} variants")


def check_folder(args):
    with open(args.expected, encoding="utf-8") as f:
        doc = json.load(f)
    if args.against not in doc["variants"]:
        print(f"st_upstream.py: --against {args.against!r}: not a variant of {args.expected} "
              f"(one of {', '.join(doc['variants'])})", file=sys.stderr)
        return 2
    v = doc["variants"][args.against]
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = loadable_copy(args.check_folder, tmp)
        if v["kind"] == "CrossEncoder":
            for case_id, case in v["cases"].items():
                ce = cross_encoder(folder)
                got = run_ce_case(ce, {"predict": case["predict"]}, doc["pairs"])
                diff = float(np.max(np.abs(got - np.asarray(case["scores"], dtype=np.float32))))
                worst = max(worst, diff)
                print(f"{args.against}/{case_id}: max abs difference {diff:.3g}")
            ids = [ce_features(ce, p)["input_ids"][0].tolist() for p in doc["pairs"]]
            for i, (a, b) in enumerate(zip(ids, v["input_ids"])):
                if a != b:
                    print(f"  pair {i}: input ids {a} != expected {b}")
        else:
            cache = {}
            for case_id, case in v["cases"].items():
                model = load_st(folder, case.get("truncate_dim"), cache)
                emb, ids, _, _ = run_st_case(model, case, doc["sentences"])
                want = np.asarray(case["embeddings"], dtype=np.float32)
                if emb.shape != want.shape:
                    print(f"{args.against}/{case_id}: shape {emb.shape} != expected {want.shape}")
                    worst = float("inf")
                    continue
                diff = float(np.max(np.abs(emb - want)))
                worst = max(worst, diff)
                print(f"{args.against}/{case_id}: max abs difference {diff:.3g}")
                for i, (a, b) in enumerate(zip(ids, case.get("input_ids", v["input_ids"]))):
                    if a != b:
                        print(f"  sentence {i}: input ids {a} != expected {b}")
    print(f"{args.against}: max abs difference {worst:.3g}")
    return 1 if args.tolerance is not None and worst > args.tolerance else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="st_models.py's output folder")
    ap.add_argument("--out", help="the expected-values JSON to write")
    ap.add_argument("--source", action="append", default=[], metavar="NAME=COMMIT",
                    help="record which source commit of a library ran (repeatable)")
    ap.add_argument("--check-folder", help="a sentence-transformers folder to compare with --against")
    ap.add_argument("--against", help="the variant of the expected JSON to compare --check-folder with")
    ap.add_argument("--expected", default=DEFAULT_EXPECTED, help=f"expected values (default {DEFAULT_EXPECTED})")
    ap.add_argument("--tolerance", type=float, help="exit 1 when a difference exceeds this")
    ap.add_argument("--write-stand-in", metavar="DIR", help="write the import-only safetensors package into DIR")
    args = ap.parse_args()
    if args.write_stand_in:
        write_stand_in(args.write_stand_in)
        return
    import_library()
    if args.check_folder:
        if not args.against:
            ap.error("--check-folder needs --against VARIANT")
        sys.exit(check_folder(args))
    if not (args.models and args.out):
        ap.error("give --models DIR --out JSON, or --check-folder DIR --against VARIANT")
    write_expected(args)


if __name__ == "__main__":
    main()
