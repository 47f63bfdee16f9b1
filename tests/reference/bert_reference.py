#!/usr/bin/env python3
"""PyTorch reference for bertrt's model tests (run with Debian's /usr/bin/python3 + python3-torch).

Builds a tiny BERT with Hugging Face's module structure and state-dict names (modeling_bert.py:
BertEmbeddings, BertSelfAttention, BertSelfOutput, BertIntermediate, BertOutput, BertPooler,
BertLMPredictionHead with the decoder tied to the word embeddings, cls.seq_relationship,
classifier), in float64 so that the only error left in a comparison is bertrt's fp32. Writes one
safetensors file with the config (metadata), the weights, the inputs and targets, the outputs, the
losses, the gradient of every parameter ("grad/<name>"), and the losses of 3 AdamW steps with
global-norm clipping at 1.0 ("trajectory"; gradients below 1e-5 of the largest zeroed before each
step, as the C++ side does: drop_tiny_grads). Dropout is 0 (bertrt's default).
The fine-tuning heads without a pre-training counterpart (regression, BertForTokenClassification,
BertForQuestionAnswering) are separate models on the same inputs, their tensors under
"regression/", "token_classification/" and "question_answering/" (the same keys otherwise).
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
        # Additive mask of google-research/bert modeling.py: 0 keep, -10000 drop (in the model's
        # dtype: float64 for the reference files, float32 for pretrain_twin.py).
        dtype = self.embeddings.word_embeddings.weight.dtype
        mask_add = (1.0 - attention_mask[:, None, None, :].to(dtype)) * -10000.0
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


class BertForSequenceRegression(nn.Module):
    """BertForSequenceClassification with num_labels = 1 (problem_type "regression")."""

    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.classifier = nn.Linear(c["hidden_size"], 1)

    def forward(self, batch):
        h, pooled = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        logits = self.classifier(pooled)
        # modeling_bert.py: MSELoss()(logits.squeeze(), labels.squeeze()) when num_labels == 1.
        loss = F.mse_loss(logits.squeeze(), batch["scores"].squeeze())
        return {"loss": loss}, {"logits": logits}


class BertForTokenClassification(nn.Module):
    """HF builds its BertModel with add_pooling_layer=False; bertrt keeps the pooler (the encoder
    is shared across heads), so it is here too and its gradient must come out exactly zero."""

    def __init__(self, c, num_labels):
        super().__init__()
        self.bert = BertModel(c)
        self.classifier = nn.Linear(c["hidden_size"], num_labels)

    def forward(self, batch):
        h, _ = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        logits = self.classifier(h)
        K = logits.shape[-1]
        loss = F.cross_entropy(logits.view(-1, K), batch["token_labels"].long().view(-1),
                               ignore_index=-100)
        return {"loss": loss}, {"logits": logits}


class BertForQuestionAnswering(nn.Module):
    """Pooler kept as in BertForTokenClassification above."""

    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, batch):
        h, _ = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        start_logits, end_logits = self.qa_outputs(h).split(1, dim=-1)
        start_logits = start_logits.squeeze(-1).contiguous()
        end_logits = end_logits.squeeze(-1).contiguous()
        # modeling_bert.py: positions outside the model inputs are clamped to ignored_index = T.
        ignored_index = start_logits.size(1)
        start = batch["start_positions"].long().clamp(0, ignored_index)
        end = batch["end_positions"].long().clamp(0, ignored_index)
        loss = (F.cross_entropy(start_logits, start, ignore_index=ignored_index) +
                F.cross_entropy(end_logits, end, ignore_index=ignored_index)) / 2
        return {"loss": loss}, {"start_logits": start_logits, "end_logits": end_logits}


def randomize(model):
    with torch.no_grad():  # weights large enough that every path matters
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))


def drop_tiny_grads(model):
    """Zeroes gradient elements below 1e-5 of the largest, as bert_reference_test.cpp does on its
    side: Adam's early steps move a weight by about lr·sign(g) whatever |g|, so a gradient that is
    fp32 rounding noise would steer the trajectory by whichever sign the rounding picked."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    threshold = 1e-5 * max(g.abs().max().item() for g in grads)
    for g in grads:
        g[g.abs() < threshold] = 0


def replay(model, batch, prefix):
    """Parameters, forward outputs, losses, every gradient, then the losses of 3 steps of
    clip_grad_norm_(1.0) + AdamW with BERT's no-decay groups, keyed under `prefix`."""
    out = {f"{prefix}param/{n}": p.detach().float().clone() for n, p in model.named_parameters()}
    losses, outputs = model(batch)
    loss = sum(losses.values())
    loss.backward()
    out.update({f"{prefix}output/{k}": v.detach().float() for k, v in outputs.items()})
    out.update({f"{prefix}output/{k}": v.detach().reshape(1) for k, v in losses.items()})
    # A parameter the loss does not reach (the pooler under token/span heads) has grad None.
    out.update({f"{prefix}grad/{n}": (p.grad if p.grad is not None else torch.zeros_like(p))
                .detach().float() for n, p in model.named_parameters()})

    decay = [p for n, p in model.named_parameters() if not ("LayerNorm" in n or n.endswith("bias"))]
    no_decay = [p for n, p in model.named_parameters() if "LayerNorm" in n or n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    trajectory = [loss.item()]
    for _ in range(3):
        drop_tiny_grads(model)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        losses, _ = model(batch)
        loss = sum(losses.values())
        loss.backward()
        trajectory.append(loss.item())
    out[f"{prefix}trajectory"] = torch.tensor(trajectory)
    return out


def fine_tuning_heads(c, batch, attention_mask, num_token_labels):
    """Regression, token classification and span extraction on the same inputs, each a model of
    its own under "<kind>/" (its targets under "<kind>/input/")."""
    B, T = batch["input_ids"].shape
    out = {}

    scores = 5.0 * torch.rand(B)  # STS-B-like similarity in [0, 5)
    model = BertForSequenceRegression(c)
    randomize(model)
    out.update(replay(model, dict(batch, scores=scores), "regression/"))
    out["regression/input/scores"] = scores.float()

    # The first piece of each word carries the label; later pieces, [CLS], [SEP] and padding −100.
    token_labels = torch.randint(0, num_token_labels, (B, T), dtype=torch.int32)
    token_labels[:, 0] = -100                # [CLS]
    token_labels[0, [3, 4, 10]] = -100       # later pieces, the final [SEP]
    token_labels[1, [5, 7]] = -100
    token_labels[2, 3] = -100
    token_labels[attention_mask == 0] = -100
    model = BertForTokenClassification(c, num_token_labels)
    randomize(model)
    out.update(replay(model, dict(batch, token_labels=token_labels), "token_classification/"))
    out["token_classification/input/token_labels"] = token_labels

    # Row 1's start lies past the sequence (clamped to T, ignored); row 2's is negative (clamped
    # to 0, counted): the two means then run over different examples.
    start = torch.tensor([3, T + 3, -2], dtype=torch.int32)
    end = torch.tensor([5, 7, 2], dtype=torch.int32)
    model = BertForQuestionAnswering(c)
    randomize(model)
    out.update(replay(model, dict(batch, start_positions=start, end_positions=end),
                      "question_answering/"))
    out["question_answering/input/start_positions"] = start
    out["question_answering/input/end_positions"] = end
    return out


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
    num_labels, num_token_labels, B, T = 3, 5, 3, 11
    model = BertWithAllHeads(c, num_labels)
    randomize(model)

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

    out = {f"input/{k}": v for k, v in batch.items()}
    out.update(replay(model, batch, ""))
    out.update(fine_tuning_heads(c, batch, attention_mask, num_token_labels))
    write_safetensors(args.out, out, {"config": json.dumps(c), "num_labels": str(num_labels),
                                      "num_token_labels": str(num_token_labels)})


if __name__ == "__main__":
    main()
