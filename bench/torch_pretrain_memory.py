#!/usr/bin/env python3
"""PyTorch side of bench/pretrain_memory.sh: a few fp32 BertForPreTraining steps (MLM + NSP,
Hugging Face module structure from tests/reference/bert_reference.py, decoder tied to the word
embeddings), AdamW (decay 0.01 except LayerNorm/bias) with clip_grad_norm_(1.0), on random ids of
the same shape bertrt trains on. Peak RSS is measured from outside (/usr/bin/time -v).

  --freeze-embeddings / --freeze-layers K : requires_grad=False (no grads, no AdamW state)
  --recompute                            : torch.utils.checkpoint around each encoder layer
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "reference"))
from bert_reference import BertWithAllHeads  # noqa: E402

PRESETS = {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512), "medium": (8, 512), "base": (12, 768)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="mini", choices=PRESETS)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--predictions", type=int, default=20)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--freeze-embeddings", action="store_true")
    ap.add_argument("--freeze-layers", type=int, default=0)
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--dynamic-masking", action="store_true",
                    help="accepted for bertrt's row: the random batches here hold no data stream")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    L, H = PRESETS[a.preset]
    c = dict(vocab_size=30522, hidden_size=H, num_hidden_layers=L, num_attention_heads=H // 64,
             intermediate_size=4 * H, hidden_act="gelu", max_position_embeddings=512,
             type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0, initializer_range=0.02)
    model = BertWithAllHeads(c, 2).float()
    del model.classifier  # BertForPreTraining has no classifier
    bert = model.bert
    if a.freeze_embeddings:
        for p in bert.embeddings.parameters():
            p.requires_grad_(False)
    for layer in bert.encoder.layer[: a.freeze_layers]:
        for p in layer.parameters():
            p.requires_grad_(False)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in params if not ("LayerNorm" in n or n.endswith("bias"))]
    no_decay = [p for n, p in params if "LayerNorm" in n or n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-4)

    B, T, P = a.batch_size, a.seq_len, a.predictions
    ids = torch.randint(5, c["vocab_size"], (B, T))
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, T // 2:] = 1
    mask_add = torch.zeros(B, 1, 1, T)  # float32, no padding
    positions = torch.stack([torch.randperm(T)[:P] + b * T for b in range(B)]).flatten()
    labels = torch.randint(5, c["vocab_size"], (B * P,))
    nsp = torch.randint(0, 2, (B,))

    def encode(x):
        for i, layer in enumerate(bert.encoder.layer):
            if a.recompute and i >= a.freeze_layers:
                x = torch.utils.checkpoint.checkpoint(layer, x, mask_add, use_reentrant=False)
            else:
                x = layer(x, mask_add)
        return x

    for step in range(a.steps):
        t0 = time.time()
        h = encode(bert.embeddings(ids, types))
        pooled = bert.pooler(h)
        rows = h.reshape(B * T, -1)[positions]
        logits = model.cls.predictions.transform(rows) @ bert.embeddings.word_embeddings.weight.t() \
            + model.cls.predictions.bias
        loss = F.cross_entropy(logits, labels) + F.cross_entropy(model.cls.seq_relationship(pooled), nsp)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for _, p in params], 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"step {step + 1}: loss {loss.item():.4f} ({time.time() - t0:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
