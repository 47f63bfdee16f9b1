#!/usr/bin/env python3
"""PyTorch reference for bertrt's model tests (run with Debian's /usr/bin/python3 + python3-torch).

Builds a tiny BERT with Hugging Face's module structure and state-dict names (modeling_bert.py:
BertEmbeddings, BertSelfAttention, BertSelfOutput, BertIntermediate, BertOutput, BertPooler,
BertLMPredictionHead with the decoder tied to the word embeddings, cls.seq_relationship,
classifier), in float64 so that the only error left in a comparison is bertrt's fp32. Writes one
safetensors file with the config (metadata), the weights, the inputs and targets, the outputs, the
losses, the gradient of every parameter ("grad/<name>"), and the losses of 3 AdamW steps with
global-norm clipping at 1.0 ("trajectory"). Dropout is 0 (bertrt trains without dropout).
"""
import argparse
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F


def gelu(x, act):
    if act == "gelu":
        return F.gelu(x)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, input_ids, token_type_ids):
        T = input_ids.shape[1]
        pos = torch.arange(T).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos) + \
            self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.nh = c["num_attention_heads"]
        self.hs = H // self.nh
        self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.nh, self.hs).permute(0, 2, 1, 3)

    def forward(self, x, mask_add):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hs) + mask_add
        probs = scores.softmax(-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(x.shape)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, h, inp):
        return self.LayerNorm(self.dense(h) + inp)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, x, mask_add):
        return self.output(self.self(x, mask_add), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = c["hidden_act"]

    def forward(self, x):
        return gelu(self.dense(x), self.act)


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, h, inp):
        return self.LayerNorm(self.dense(h) + inp)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, x, mask_add):
        a = self.attention(x, mask_add)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x, mask_add):
        for layer in self.layer:
            x = layer(x, mask_add)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, h):
        return torch.tanh(self.dense(h[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids, token_type_ids, attention_mask):
        # Additive mask of google-research/bert modeling.py: 0 keep, -10000 drop.
        mask_add = (1.0 - attention_mask[:, None, None, :].double()) * -10000.0
        h = self.encoder(self.embeddings(input_ids, token_type_ids), mask_add)
        return h, self.pooler(h)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.act = c["hidden_act"]

    def forward(self, x):
        return self.LayerNorm(gelu(self.dense(x), self.act))


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class Heads(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)


class BertWithAllHeads(nn.Module):
    """BertForPreTraining (bert + cls) plus a sequence-classification `classifier`."""

    def __init__(self, c, num_labels):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = Heads(c)
        self.classifier = nn.Linear(c["hidden_size"], num_labels)

    def forward(self, batch):
        h, pooled = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        B, T, C = h.shape
        rows = h.reshape(B * T, C)[batch["mlm_positions"].long()]
        t = self.cls.predictions.transform(rows)
        mlm_logits = t @ self.bert.embeddings.word_embeddings.weight.t() + self.cls.predictions.bias
        nsp_logits = self.cls.seq_relationship(pooled)
        cls_logits = self.classifier(pooled)
        losses = {
            "mlm_loss": F.cross_entropy(mlm_logits, batch["mlm_labels"].long(), ignore_index=-100),
            "nsp_loss": F.cross_entropy(nsp_logits, batch["nsp_labels"].long()),
            "cls_loss": F.cross_entropy(cls_logits, batch["labels"].long()),
        }
        outputs = {"last_hidden_state": h, "pooler_output": pooled,
                   "prediction_logits": mlm_logits, "seq_relationship_logits": nsp_logits,
                   "logits": cls_logits}
        return losses, outputs


def write_safetensors(path, tensors, metadata):
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64"}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--hidden-act", default="gelu", choices=["gelu", "gelu_new"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_default_dtype(torch.float64)

    # Odd sizes on purpose: nothing divides the SIMD width.
    c = dict(vocab_size=99, hidden_size=36, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37, hidden_act=args.hidden_act, max_position_embeddings=24,
             type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0, initializer_range=0.02)
    num_labels, B, T = 3, 3, 11
    model = BertWithAllHeads(c, num_labels)
    with torch.no_grad():  # weights large enough that every path matters
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))

    input_ids = torch.randint(1, c["vocab_size"], (B, T), dtype=torch.int32)
    token_type_ids = torch.zeros(B, T, dtype=torch.int32)
    token_type_ids[:, 6:] = 1
    attention_mask = torch.ones(B, T, dtype=torch.int32)
    attention_mask[1, 8:] = 0  # padded rows
    attention_mask[2, 4:] = 0
    input_ids[attention_mask == 0] = 0
    mlm_positions = torch.tensor([1, 3, 4, 9, T + 2, T + 5, 2 * T + 1, 2 * T + 3], dtype=torch.int32)
    mlm_labels = torch.randint(1, c["vocab_size"], (len(mlm_positions),), dtype=torch.int32)
    mlm_labels[2] = -100  # an ignored position
    batch = dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                 mlm_positions=mlm_positions, mlm_labels=mlm_labels,
                 nsp_labels=torch.tensor([0, 1, 1], dtype=torch.int32),
                 labels=torch.tensor([2, 0, 1], dtype=torch.int32))

    out = {f"param/{n}": p.detach().float().clone() for n, p in model.named_parameters()}
    out.update({f"input/{k}": v for k, v in batch.items()})
    losses, outputs = model(batch)
    loss = sum(losses.values())
    loss.backward()
    out.update({f"output/{k}": v.detach().float() for k, v in outputs.items()})
    out.update({f"output/{k}": v.detach().reshape(1) for k, v in losses.items()})
    out.update({f"grad/{n}": p.grad.detach().float() for n, p in model.named_parameters()})

    # 3 optimizer steps: clip_grad_norm_(1.0), AdamW with BERT's no-decay groups.
    decay = [p for n, p in model.named_parameters() if not ("LayerNorm" in n or n.endswith("bias"))]
    no_decay = [p for n, p in model.named_parameters() if "LayerNorm" in n or n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    trajectory = [loss.item()]
    for _ in range(3):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        losses, _ = model(batch)
        loss = sum(losses.values())
        loss.backward()
        trajectory.append(loss.item())
    out["trajectory"] = torch.tensor(trajectory)
    write_safetensors(args.out, out, {"config": json.dumps(c), "num_labels": str(num_labels)})


if __name__ == "__main__":
    main()
