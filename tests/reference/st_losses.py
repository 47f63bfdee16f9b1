#!/usr/bin/env python3
"""Training losses of sentence-transformers and their parameter gradients, computed by the library itself.

  st_losses.py --models DIR --out tests/reference/expected/sentence_transformers_losses.json \\
      [--source sentence-transformers=COMMIT ...]

DIR is st_models.py's output. For the pool_mean and dense_normalize folders, each loss of LOSSES
below is called as SentenceTransformer.fit() calls it, on one fixed batch: features =
model.tokenize(column) for each text column, labels = torch.tensor(the batch's labels), then
loss(features, labels).backward(). The model is in eval mode (dropout off); fit() would call
train(). The JSON holds the texts, labels and input ids of each batch, and per folder and loss
the float32 loss value and a fingerprint of every parameter's gradient (FINGERPRINT below), the
parameters the loss leaves untouched, and a few gradients in full.

Before writing, every loss value is recomputed from the model's embeddings by a few lines of
plain torch (independent()), its gradients by backward() of that, and
CachedMultipleNegativesRankingLoss is compared with MultipleNegativesRankingLoss on the same
batch; the script stops on a mismatch. Run it as st_upstream.py (the same library on the path,
the same accommodations: the slow tokenizer, pytorch_model.bin where safetensors cannot read).
Exit status 77 when the library is missing.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_upstream as up  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "expected", "sentence_transformers_losses.json")

# Folder → matryoshka_dims: the full width first (MatryoshkaLoss of 2.7.0 needs them in
# decreasing order, see the JSON's "MatryoshkaLoss" formula).
VARIANTS = {"pool_mean": [36, 16, 8], "dense_normalize": [12, 8, 4]}

# Texts over make_hf_models.py's vocabulary, 2 to 17 tokens with [CLS] and [SEP]; "ran" and
# "able" are not in it ([UNK]), "runs" and "running" are pieces of it.
PAIRS = {
    "anchor": ["the cat sat on the mat .", "a dog", "she is unable to run",
               "the big red dog and the small blue cat"],
    "positive": ["a cat is on the mat", "the old dog runs", "she was not running",
                 "a big red dog and a small cat sat on it"],
    "negative": ["the dog sat on the mat .", "a cat", "he is running to the dog", "green"],
}
SCORED = {
    "sentence1": ["the cat sat on the mat .", "a dog runs", "she is unable to run", "the big red dog", "we ran to it"],
    "sentence2": ["a cat sat on a mat", "the dog is running", "she is able to run", "the small blue cat",
                  "they run to the old dog ?"],
}
SCORES = [1.0, 0.75, 0.25, 0.25, 0.0]  # two tied; exact in float32

LOSSES = {
    "MultipleNegativesRankingLoss": dict(
        columns=["anchor", "positive"], labels=None,
        call="MultipleNegativesRankingLoss(model)",
        formula="s = 20 * cos_sim(A, P) (B x B, util.cos_sim: rows L2-normalized, then A P^T); "
                "loss = cross_entropy(s, arange(B)), mean over the B anchors"),
    "MultipleNegativesRankingLoss_hard_negative": dict(
        columns=["anchor", "positive", "negative"], labels=None,
        call="MultipleNegativesRankingLoss(model)",
        formula="the same with the candidates cat(P, N) (B x 2B): each anchor's own positive is the target, "
                "every other positive and every negative (its own included) a negative"),
    "CoSENTLoss": dict(
        columns=["sentence1", "sentence2"], labels=SCORES,
        call="CoSENTLoss(model)",
        formula="s = 20 * pairwise_cos_sim(U, V) (B); d[i,j] = s[i] - s[j] where labels[i] < labels[j], "
                "s[i] - s[j] - 1e12 elsewhere (ties and the diagonal, so exp underflows to exactly 0); "
                "loss = logsumexp([0] + d.flatten()) = log(1 + sum over labels[i] < labels[j] of exp(s[i] - s[j]))"),
    "CosineSimilarityLoss": dict(
        columns=["sentence1", "sentence2"], labels=SCORES,
        call="CosineSimilarityLoss(model)",
        formula="loss = MSELoss()(torch.cosine_similarity(U, V), labels) = mean over the B pairs of "
                "(cos(u_i, v_i) - label_i)^2"),
    "MatryoshkaLoss": dict(
        columns=["anchor", "positive"], labels=None,
        call="MatryoshkaLoss(model, MultipleNegativesRankingLoss(model), matryoshka_dims)",
        formula="loss = sum over d in matryoshka_dims of 1 * MNRL(A[:, :d], P[:, :d]) (default weights all 1); "
                "each truncation is L2-normalized (F.normalize) before the inner loss. The model runs once: "
                "2.7.0 caches the output dict of the first dim and truncates that (already truncated and "
                "normalized) output for the next dims, which equals truncating the full embedding only when "
                "the dims decrease"),
    "CachedMultipleNegativesRankingLoss": dict(
        columns=["anchor", "positive"], labels=None,
        call="CachedMultipleNegativesRankingLoss(model, mini_batch_size=2)",
        formula="MultipleNegativesRankingLoss computed in mini-batches (GradCache): embeddings without a graph, "
                "the loss of anchors [b, b+2) against all candidates times 2/B, summed, its gradient with "
                "respect to the embeddings cached, then each mini-batch embedded again and backpropagated "
                "with that cached gradient. Each mini-batch keeps the full batch's padding. Equal to "
                "MultipleNegativesRankingLoss up to float rounding"),
}

# CrossEncoder.fit with one label: (query, passage) pairs and float labels (soft ones included, as
# BCEWithLogitsLoss takes them); the cross_encoder folder of st_models.py.
RERANK = {
    "query": ["where is the cat", "where is the cat", "a big dog", "a big dog", "who ran"],
    "passage": ["the cat sat on the mat .", "the dog runs", "the big red dog and the small blue cat",
                "green", "she is running to the dog"],
    "label": [1.0, 0.0, 1.0, 0.0, 0.5],
}
RERANK_CALL = ("CrossEncoder(folder).fit()'s loss for num_labels 1: features, labels = "
               "smart_batching_collate(InputExamples); logits = model(**features).logits.view(-1) "
               "(fit's activation_fct is nn.Identity()); loss = nn.BCEWithLogitsLoss()(logits, labels)")

# Zero in exact arithmetic: a key bias adds q.b to every score of a query's row, which softmax
# cancels. Computed, it is rounding noise (1e-8 here), whose fingerprint would compare noise.
ROUNDING_ONLY = ("attention.self.key.bias",)

GOLDEN = 2654435761
FINGERPRINT = {
    "fields": ["l2", "sum", "dot0", "dot1"],
    "recipe": "g: the gradient as float64 (from float32), flattened row-major in the shape listed under "
              "'parameters' (PyTorch's: a Linear weight is [out, in]); n = g's size. l2 = sqrt(sum g[i]^2), "
              "sum = sum g[i], dotk = sum g[i] * v_k[i] for k = 0, 1 with "
              "v_k[i] = fmix32((i * 2654435761 + crc32(name) + k) mod 2^32) / 2^32 - 0.5 (exact in float64), "
              "where crc32 is zlib's CRC-32 (the IEEE 802.3 polynomial, as gzip and PNG) of the tensor name's "
              "UTF-8 bytes, and fmix32 is MurmurHash3's finalizer on uint32: x ^= x >> 16; x *= 0x85EBCA6B; "
              "x ^= x >> 13; x *= 0xC2B2AE35; x ^= x >> 16 (products mod 2^32)",
    "compare": "float32 gradients computed in another order differ from these by rounding: compare l2 with a "
               "tolerance relative to l2, sum with one relative to l2 * sqrt(n), dotk with one relative to "
               "l2 * |v_k| (the Cauchy-Schwarz bounds). Some fields are zero in exact arithmetic and hold rounding "
               "noise: the sum of every gradient that feeds a LayerNorm's input (the embedding tables, attention.output.dense, "
               "output.dense), since LayerNorm's input gradient sums to zero per token",
}


def probe(name, n, k):
    np = up.np
    mask = np.uint64(0xFFFFFFFF)
    x = (np.arange(n, dtype=np.uint64) * np.uint64(GOLDEN) + np.uint64(zlib.crc32(name.encode("utf-8")) + k)) & mask
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & mask
    x ^= x >> np.uint64(13)
    x = (x * np.uint64(0xC2B2AE35)) & mask
    x ^= x >> np.uint64(16)
    return x.astype(np.float64) / 2.0 ** 32 - 0.5


def fingerprint(name, grad):
    g = up.np.asarray(grad, dtype=up.np.float32).astype(up.np.float64).ravel()
    return [math.sqrt(float(g @ g)), float(g.sum())] + [float(g @ probe(name, g.size, k)) for k in (0, 1)]


def sig10(values):
    """10 significant digits: float32 gradients carry fewer, the float64 sums over them more."""
    return [float(f"{x:.10g}") for x in values]


def fingerprint_error(name, got, want):
    """The largest difference of two fingerprints, each field over its scale (FINGERPRINT's compare)."""
    n = want["size"]
    l2 = max(want["fp"][0], 1e-30)
    scales = [l2, l2 * math.sqrt(n)] + [l2 * float(up.np.linalg.norm(probe(name, n, k))) for k in (0, 1)]
    return max(abs(a - b) / s for a, b, s in zip(got, want["fp"], scales))


def bertrt_names(model, folder):
    """Upstream parameter name → bertrt's: the Transformer's under "bert.", a module's under its folder."""
    with open(os.path.join(folder, "modules.json"), encoding="utf-8") as f:
        paths = {str(m["idx"]): m["path"] for m in json.load(f)}
    out = {}
    for name, _ in model.named_parameters():
        idx, rest = name.split(".", 1)
        if rest.startswith("auto_model."):
            out[name] = "bert." + rest[len("auto_model."):]
        else:
            out[name] = f"{paths[idx]}.{rest}"
    # the same names as the folder's weight files give bertrt-convert (less the buffers it drops)
    files = {f"bert.{k}" for k in up.torch.load(os.path.join(folder, "pytorch_model.bin"))
             if k not in ("embeddings.position_ids", "embeddings.token_type_ids")}
    for path in set(paths.values()) - {""}:
        if os.path.exists(os.path.join(folder, path, "pytorch_model.bin")):
            files |= {f"{path}.{k}" for k in up.torch.load(os.path.join(folder, path, "pytorch_model.bin"))}
    assert files == set(out.values()), files ^ set(out.values())
    return out


def batch(model, spec):
    torch = up.torch
    columns = {**PAIRS, **SCORED}
    texts = [columns[c] for c in spec["columns"]]
    features = [model.tokenize(t) for t in texts]
    n = len(texts[0])
    # InputExample's default label is 0; fit() collates torch.tensor(labels)
    labels = torch.tensor(spec["labels"] if spec["labels"] is not None else [0] * n)
    return features, labels


def make_loss(model, loss_id, dims):
    from sentence_transformers import losses
    if loss_id.startswith("MultipleNegativesRankingLoss"):
        return losses.MultipleNegativesRankingLoss(model)
    if loss_id == "CoSENTLoss":
        return losses.CoSENTLoss(model)
    if loss_id == "CosineSimilarityLoss":
        return losses.CosineSimilarityLoss(model)
    if loss_id == "MatryoshkaLoss":
        return losses.MatryoshkaLoss(model, losses.MultipleNegativesRankingLoss(model), matryoshka_dims=dims)
    if loss_id == "CachedMultipleNegativesRankingLoss":
        return losses.CachedMultipleNegativesRankingLoss(model, mini_batch_size=2)
    raise KeyError(loss_id)


def independent(loss_id, emb, labels, dims):
    """The loss from the embeddings (one float32 row per text, a list per column) in plain torch."""
    torch = up.torch
    F = torch.nn.functional

    def mnrl(a, candidates):
        s = 20.0 * F.normalize(a, dim=1) @ F.normalize(candidates, dim=1).T
        return F.cross_entropy(s, torch.arange(len(a)))

    if loss_id in ("MultipleNegativesRankingLoss", "CachedMultipleNegativesRankingLoss"):
        return mnrl(emb[0], emb[1])
    if loss_id == "MultipleNegativesRankingLoss_hard_negative":
        return mnrl(emb[0], torch.cat([emb[1], emb[2]]))
    if loss_id == "MatryoshkaLoss":
        return sum(mnrl(emb[0][:, :d], emb[1][:, :d]) for d in dims)
    cos = (F.normalize(emb[0], dim=1) * F.normalize(emb[1], dim=1)).sum(1)
    if loss_id == "CoSENTLoss":
        s = 20.0 * cos
        terms = [s[i] - s[j] for i in range(len(s)) for j in range(len(s)) if labels[i] < labels[j]]
        return torch.logsumexp(torch.stack([torch.zeros(())] + terms), 0)
    if loss_id == "CosineSimilarityLoss":
        return ((cos - labels) ** 2).mean()
    raise KeyError(loss_id)


def gradients(model, names):
    """bertrt name → the float32 gradient as numpy, or None where backward() left none."""
    return {names[n]: (None if p.grad is None else p.grad.detach().numpy().copy()) for n, p in model.named_parameters()}


def run_variant(folder, dims):
    model = up.SentenceTransformer(folder, device="cpu")
    model.eval()
    names = bertrt_names(model, folder)
    results, checks = {}, {}
    for loss_id, spec in LOSSES.items():
        loss_fn = make_loss(model, loss_id, dims)
        model.zero_grad(set_to_none=True)
        features, labels = batch(model, spec)
        loss = loss_fn(features, labels)
        loss.backward()
        grads = gradients(model, names)
        ids = [f["input_ids"][i][f["attention_mask"][i].bool()].tolist() for f in features for i in range(len(labels))]
        # the same batch through plain torch: loss and gradients
        model.zero_grad(set_to_none=True)
        features, labels = batch(model, spec)
        emb = [model(f)["sentence_embedding"] for f in features]
        mine = independent(loss_id, emb, labels, dims)
        mine.backward()
        checks[loss_id] = (float(mine), gradients(model, names))
        results[loss_id] = dict(loss=float(loss.detach()), grads=grads, input_ids=ids)
    model.zero_grad(set_to_none=True)
    shapes = {names[n]: list(p.shape) for n, p in model.named_parameters()}
    return results, checks, shapes


def run_cross_encoder(folder):
    """The reranker's loss and gradients as CrossEncoder.fit computes them (model in eval mode)."""
    from sentence_transformers import InputExample
    torch = up.torch
    ce = up.cross_encoder(folder)
    ce.model.eval()
    assert ce.config.num_labels == 1
    batch = [InputExample(texts=[q, p], label=y) for q, p, y in zip(RERANK["query"], RERANK["passage"], RERANK["label"])]
    features, labels = ce.smart_batching_collate(batch)
    ce.model.zero_grad(set_to_none=True)
    logits = torch.nn.Identity()(ce.model(**features, return_dict=True).logits).view(-1)
    loss = torch.nn.BCEWithLogitsLoss()(logits, labels)
    loss.backward()
    grads = {n: (None if p.grad is None else p.grad.detach().numpy().copy()) for n, p in ce.model.named_parameters()}
    # The same loss by its formula from the logits, in float64: max(z, 0) - z y + log(1 + exp(-|z|)).
    z = logits.detach().double()
    y = labels.double()
    mine = float((z.clamp(min=0) - z * y + torch.log1p(torch.exp(-z.abs()))).mean())
    dl = abs(mine - float(loss)) / max(1.0, abs(mine))
    print(f"cross_encoder/BCEWithLogitsLoss vs its formula: loss differs by {dl:.2g}")
    if dl > 2e-6:
        raise SystemExit("st_losses.py: cross_encoder: the loss differs from its formula")
    ids = [features["input_ids"][i][features["attention_mask"][i].bool()].tolist() for i in range(len(batch))]
    shapes = {n: list(p.shape) for n, p in ce.model.named_parameters()}
    out = summarize({"BCEWithLogitsLoss": dict(loss=float(loss.detach()), grads=grads)}, None)["BCEWithLogitsLoss"]
    return {"folder": "cross_encoder", "call": RERANK_CALL, "query": RERANK["query"], "passage": RERANK["passage"],
            "labels": up.f32(RERANK["label"]), "input_ids": ids, "logits": up.f32(z.numpy()),
            "max_length": ce.max_length, "parameters": shapes, **out, "checks": [float(f"{dl:.2g}")]}


def summarize(results, dense_first):
    out = {}
    for loss_id, r in results.items():
        untouched = [n for n, g in r["grads"].items() if g is None or not up.np.any(g)]
        noise = {n: float(up.np.abs(g).max()) for n, g in r["grads"].items()
                 if n not in untouched and n.endswith(ROUNDING_ONLY)}
        fps = {n: sig10(fingerprint(n, g)) for n, g in r["grads"].items() if n not in untouched and n not in noise}
        largest = max(float(up.np.abs(r["grads"][n]).max()) for n in fps)
        assert all(x < 1e-5 * largest for x in noise.values()), noise
        full = {"bert.embeddings.LayerNorm.weight": up.f32(r["grads"]["bert.embeddings.LayerNorm.weight"])}
        if dense_first:
            full[f"{dense_first}[0]"] = up.f32(r["grads"][dense_first][0])
        out[loss_id] = {"loss": up.f32([r["loss"]])[0], "untouched": untouched,
                        "rounding_only": {n: up.f32([x])[0] for n, x in noise.items()}, "gradients": fps,
                        "full": full}
    return out


def verify(variant, results, checks, tol_loss=2e-6, tol_grad=1e-5):
    """Upstream's numbers against plain torch, and Cached MNRL against MNRL; raises on a mismatch.
    Returns the differences, as the JSON's "checks" describes them."""
    found = {}

    def compare(what, a_loss, a_grads, b_loss, b_grads):
        dl = abs(a_loss - b_loss) / max(1.0, abs(b_loss))
        dg = 0.0
        for n, g in b_grads.items():
            if n.endswith(ROUNDING_ONLY):
                continue
            if g is None or not up.np.any(g):
                if a_grads[n] is not None and up.np.any(a_grads[n]):
                    raise SystemExit(f"st_losses.py: {variant}/{what}: {n} has a gradient on one side only")
                continue
            want = {"fp": fingerprint(n, g), "size": g.size}
            dg = max(dg, fingerprint_error(n, fingerprint(n, a_grads[n]), want))
        print(f"{variant}/{what}: loss differs by {dl:.2g}, gradient fingerprints by {dg:.2g} of their scale")
        if dl > tol_loss or dg > tol_grad:
            raise SystemExit(f"st_losses.py: {variant}/{what}: beyond {tol_loss} (loss) or {tol_grad} (gradients)")
        return [float(f"{dl:.2g}"), float(f"{dg:.2g}")]

    for loss_id, r in results.items():
        mine, mine_grads = checks[loss_id]
        found[loss_id] = compare(f"{loss_id} vs plain torch", mine, mine_grads, r["loss"], r["grads"])
    m, c = results["MultipleNegativesRankingLoss"], results["CachedMultipleNegativesRankingLoss"]
    found["CachedMultipleNegativesRankingLoss vs MultipleNegativesRankingLoss"] = compare(
        "CachedMultipleNegativesRankingLoss vs MultipleNegativesRankingLoss", c["loss"], c["grads"],
        m["loss"], m["grads"])
    return found


def compute(models_dir):
    variants, batches = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, dims in VARIANTS.items():
            folder = up.loadable_copy(os.path.join(models_dir, name), tmp)
            results, checks, shapes = run_variant(folder, dims)
            found = verify(name, results, checks)
            for loss_id, r in results.items():
                prev = batches.setdefault(loss_id, r["input_ids"])
                assert prev == r["input_ids"], (name, loss_id)
            dense = sorted(n for n in shapes if n.endswith("_Dense.linear.weight"))
            model_dim = shapes[dense[-1]][0] if dense else shapes["bert.embeddings.LayerNorm.weight"][0]
            assert dims[0] == model_dim, (name, dims, model_dim)
            variants[name] = {"folder": name, "dimension": model_dim, "matryoshka_dims": dims, "parameters": shapes,
                              "losses": summarize(results, dense[0] if dense else None), "checks": found}
        cross = run_cross_encoder(up.loadable_copy(os.path.join(models_dir, "cross_encoder"), tmp))
    return variants, batches, cross


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, help="st_models.py's output folder")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"the JSON to write (default {DEFAULT_OUT})")
    ap.add_argument("--source", action="append", default=[], metavar="NAME=COMMIT",
                    help="record which source commit of a library ran (repeatable)")
    args = ap.parse_args()
    up.import_library()
    variants, batches, cross = compute(args.models)
    columns = {**PAIRS, **SCORED}
    losses = {}
    for loss_id, spec in LOSSES.items():
        n = len(columns[spec["columns"][0]])
        ids = batches[loss_id]
        losses[loss_id] = {
            "call": spec["call"], "formula": spec["formula"], "columns": spec["columns"],
            "texts": [columns[c] for c in spec["columns"]],
            "input_ids": [ids[i * n:(i + 1) * n] for i in range(len(spec["columns"]))],
            "labels": up.f32(spec["labels"]) if spec["labels"] is not None else [0] * n,
        }
    example = "bert.embeddings.LayerNorm.weight"
    doc = {
        "description": "Loss values and parameter gradients of sentence-transformers' training losses on the "
                       "pool_mean and dense_normalize folders of tests/reference/st_models.py, written by "
                       "tests/reference/st_losses.py.",
        "upstream": up.upstream(args.source),
        "semantics": {
            "call": "model = SentenceTransformer(folder, device='cpu'); model.eval() (dropout off: fit() would call "
                    "train(), bertrt trains without dropout by default); features = [model.tokenize(texts) for "
                    "each column]; labels = torch.tensor(labels) (float32 scores, or int64 zeros where the loss "
                    "takes none); loss = LOSS(features, labels); loss.backward() from zeroed gradients",
            "loss": "the loss as float32",
            "gradients": "per parameter with a nonzero gradient: its fingerprint (see 'fingerprint')",
            "untouched": "parameters whose gradient is all zero or absent (the pooler: sentence-transformers "
                         "does not use it)",
            "rounding_only": "parameters whose gradient is zero in exact arithmetic, with the largest magnitude "
                             "upstream computed (rounding noise, no fingerprint): the attention key biases, since "
                             "a key bias adds the same q.b to every score of a query's softmax row",
            "full": "whole gradients as float32: bert.embeddings.LayerNorm.weight, and row 0 of the first Dense "
                    "weight where the folder has one",
            "input_ids": "per column, each text's ids as the library's tokenizer made them, without padding",
            "checks": "per loss, [relative loss difference, largest fingerprint difference over its scale] "
                      "between the library and a few lines of plain torch on the model's embeddings "
                      "(cross_entropy of 20 * normalized A P^T; the CoSENT sum over labels[i] < labels[j]; the "
                      "mean squared cosine error), its gradients by backward(); and CachedMultipleNegativesRanking"
                      "Loss against MultipleNegativesRankingLoss",
            "names": "bertrt's tensor names: the Transformer's Hugging Face names under 'bert.', a Dense "
                     "module's under its folder ('2_Dense.linear.weight')",
        },
        "fingerprint": dict(FINGERPRINT, example={
            "name": example, "crc32": zlib.crc32(example.encode("utf-8")),
            "v0[0:4]": [float(x) for x in probe(example, 4, 0)],
            "v1[0:4]": [float(x) for x in probe(example, 4, 1)]}),
        "losses": losses,
        "variants": variants,
        "cross_encoder": cross,
    }
    up.write_json(args.out, doc, f"{len(variants)} folders, {len(LOSSES)} losses, and a cross-encoder")


if __name__ == "__main__":
    main()
