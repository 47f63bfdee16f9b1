#!/usr/bin/env python3
"""PyTorch QAT reference for bertrt's quantization-aware training (tests/unit/qat_reference_test.cpp).

The tiny BERT of bert_reference.py (Hugging Face module structure and names; MLM + NSP + a
sequence classifier; the same inputs), in float32, with torch.ao.quantization fake-quant on every
Linear as bertrt applies it (src/model/bert_quant.h):
  - the input of every nn.Linear (query, key, value, attention output, both FFN layers, pooler,
    the MLM transform, the tied decoder, seq_relationship, classifier): FakeQuantize with
    MovingAverageMinMaxObserver, quint8 [0, 255], per-tensor affine, reduce_range False,
    averaging_constant = --momentum; one observer per Linear;
  - every Linear weight, and the tied decoder's (the word-embedding table): FakeQuantize with
    PerChannelMinMaxObserver, qint8 [-127, 127], per_channel_symmetric, ch_axis 0, its min/max reset
    before each forward so the scales are the current weights' max|w| / 127;
  - with int8 embeddings, the three embedding tables through the same per-channel FakeQuantize
    (rows = channels) before the lookup.
Runs 3 training forwards with backward; between them clip_grad_norm_(1.0) + AdamW (lr 1e-3,
wd 0.01 except LayerNorm/bias); the activation observers are disabled (frozen) after forward
`--freeze` (torch.ao.quantization.disable_observer). Writes, as safetensors:
  param/<name>             initial parameters
  input/*                  the batch
  step{s}/loss             loss of forward s (s = 1, 2, 3; mlm + nsp + cls)
  step{s}/grad/<name>      gradient of every parameter at forward s
  step{s}/observer/<lin>   [min, max] of the input observer of Linear <lin> after forward s
  final/param/<name>       parameters after the 2 AdamW steps (what forward 3 ran with)
Usage: qat_reference.py --out FILE [--int8-embeddings 0|1] [--momentum 0.1] [--freeze 2]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization import FakeQuantize
from torch.ao.quantization.observer import MovingAverageMinMaxObserver, PerChannelMinMaxObserver

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_reference as R  # noqa: E402


def act_fake_quant(momentum):
    return FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                        dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False,
                        averaging_constant=momentum)


class WeightFakeQuant(nn.Module):
    """Per-output-channel symmetric int8 [-127, 127], recomputed from the current weight."""

    def __init__(self):
        super().__init__()
        self.fq = FakeQuantize(observer=PerChannelMinMaxObserver, quant_min=-127, quant_max=127,
                               dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=0)

    def forward(self, w):
        self.fq.activation_post_process.reset_min_max_vals()
        return self.fq(w)


class QatLinear(nn.Module):
    """nn.Linear with fake-quant input and weight; keeps the parameter names weight / bias."""

    def __init__(self, lin, momentum):
        super().__init__()
        self.weight, self.bias = lin.weight, lin.bias
        self.act_fq = act_fake_quant(momentum)
        self.weight_fq = WeightFakeQuant()

    def forward(self, x):
        return F.linear(self.act_fq(x), self.weight_fq(self.weight), self.bias)


def make_qat(model, momentum, int8_embeddings):
    """Swaps every nn.Linear for a QatLinear; adds the tied decoder's and the embeddings' fake-quant."""
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            if isinstance(child, nn.Linear):
                setattr(mod, child_name, QatLinear(child, momentum))
    bert = model.bert

    def bert_forward(input_ids, token_type_ids, attention_mask):  # float32 mask (R uses float64)
        mask_add = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        h = bert.encoder(bert.embeddings(input_ids, token_type_ids), mask_add)
        return h, bert.pooler(h)
    bert.forward = bert_forward
    model.decoder_act_fq = act_fake_quant(momentum)
    model.decoder_weight_fq = WeightFakeQuant()
    emb = model.bert.embeddings
    if int8_embeddings:
        emb.word_fq, emb.pos_fq, emb.type_fq = WeightFakeQuant(), WeightFakeQuant(), WeightFakeQuant()

        def emb_forward(input_ids, token_type_ids):
            T = input_ids.shape[1]
            pos = torch.arange(T).unsqueeze(0)
            x = F.embedding(input_ids, emb.word_fq(emb.word_embeddings.weight)) + \
                F.embedding(pos, emb.pos_fq(emb.position_embeddings.weight)) + \
                F.embedding(token_type_ids, emb.type_fq(emb.token_type_embeddings.weight))
            return emb.LayerNorm(x)
        emb.forward = emb_forward

    def forward(batch):
        h, pooled = model.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        B, T, C = h.shape
        rows = h.reshape(B * T, C)[batch["mlm_positions"].long()]
        t = model.cls.predictions.transform(rows)
        w = model.decoder_weight_fq(model.bert.embeddings.word_embeddings.weight)
        mlm_logits = model.decoder_act_fq(t) @ w.t() + model.cls.predictions.bias
        nsp_logits = model.cls.seq_relationship(pooled)
        cls_logits = model.classifier(pooled)
        return (F.cross_entropy(mlm_logits, batch["mlm_labels"].long(), ignore_index=-100) +
                F.cross_entropy(nsp_logits, batch["nsp_labels"].long()) +
                F.cross_entropy(cls_logits, batch["labels"].long()))
    return forward


def observers(model):
    """HF module name of each Linear → its input FakeQuantize (bertrt's '<linear>.input_observer')."""
    out = {name: mod.act_fq for name, mod in model.named_modules() if isinstance(mod, QatLinear)}
    out["cls.predictions.decoder"] = model.decoder_act_fq
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--int8-embeddings", type=int, default=1)
    ap.add_argument("--momentum", type=float, default=0.1)
    ap.add_argument("--freeze", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_default_dtype(torch.float32)

    # bert_reference.py's tiny config and batch (odd sizes: nothing divides the SIMD width).
    c = dict(vocab_size=99, hidden_size=36, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37, hidden_act="gelu", max_position_embeddings=24,
             type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0, initializer_range=0.02)
    num_labels, B, T = 3, 3, 11
    model = R.BertWithAllHeads(c, num_labels)
    R.randomize(model)
    input_ids = torch.randint(1, c["vocab_size"], (B, T), dtype=torch.int32)
    token_type_ids = torch.zeros(B, T, dtype=torch.int32)
    token_type_ids[:, 6:] = 1
    attention_mask = torch.ones(B, T, dtype=torch.int32)
    attention_mask[1, 8:] = 0
    attention_mask[2, 4:] = 0
    input_ids[attention_mask == 0] = 0
    mlm_positions = torch.tensor([1, 3, 4, 9, T + 2, T + 5, 2 * T + 1, 2 * T + 3], dtype=torch.int32)
    mlm_labels = torch.randint(1, c["vocab_size"], (len(mlm_positions),), dtype=torch.int32)
    mlm_labels[2] = -100
    batch = dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                 mlm_positions=mlm_positions, mlm_labels=mlm_labels,
                 nsp_labels=torch.tensor([0, 1, 1], dtype=torch.int32),
                 labels=torch.tensor([2, 0, 1], dtype=torch.int32))

    forward = make_qat(model, args.momentum, bool(args.int8_embeddings))
    model.train()
    out = {f"input/{k}": v for k, v in batch.items()}
    out.update({f"param/{n}": p.detach().clone() for n, p in model.named_parameters()})
    decay = [p for n, p in model.named_parameters() if not ("LayerNorm" in n or n.endswith("bias"))]
    no_decay = [p for n, p in model.named_parameters() if "LayerNorm" in n or n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    obs = observers(model)
    for step in (1, 2, 3):
        if step == args.freeze + 1:
            for fq in obs.values():
                fq.disable_observer()
        opt.zero_grad()
        loss = forward(batch)
        loss.backward()
        out[f"step{step}/loss"] = loss.detach().reshape(1)
        for n, p in model.named_parameters():
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            out[f"step{step}/grad/{n}"] = g.detach().clone()
        for name, fq in obs.items():
            mo = fq.activation_post_process
            out[f"step{step}/observer/{name}"] = torch.stack([mo.min_val, mo.max_val]).detach().clone()
        if step < 3:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step == 2:
                out.update({f"final/param/{n}": p.detach().clone() for n, p in model.named_parameters()})
    R.write_safetensors(args.out, out, {"config": json.dumps(c), "num_labels": str(num_labels),
                                        "momentum": str(args.momentum), "freeze": str(args.freeze),
                                        "int8_embeddings": str(args.int8_embeddings)})


if __name__ == "__main__":
    main()
