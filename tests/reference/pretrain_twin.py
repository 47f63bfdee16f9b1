#!/usr/bin/env python3
"""A PyTorch twin of a `bertrt pretrain` run: same init, same batches, same optimizer.

Trains Hugging Face's BertForPreTraining structure and state-dict names (bert_reference.py's
modules, plain torch, float32) on the exact micro-batches bertrt trained on
(`bertrt pretrain --dump-instances FILE`, read by instance_dump.py), from the same initial
weights (`bertrt-convert --to hf init.brt -o DIR`), with what bertrt's `--optimizer adamw` runs:
torch.optim.AdamW (bias correction; weight decay on every tensor but LayerNorm weights and biases),
Hugging Face's get_linear_schedule_with_warmup as a LambdaLR (the first update has rate 0 when
there is warm-up), clip_grad_norm_ on the global norm, and under gradient accumulation
(loss / K).backward() per micro-batch. No dropout, because bertrt trains without it (README,
"Numerics"); --dropout P puts it in (HF's places: embeddings, attention probabilities, both
sub-layer outputs) to measure what its absence costs.

Controls: --clip-fp64 clips with the float64 norm bertrt uses (clip_grad_norm_'s float32 norm is
~1e-4 off on BERT-tiny, the twin's only measured difference from bertrt); --perturb-init EPS
shows how far float-noise-sized differences grow.

Writes --metrics (JSON lines in `bertrt pretrain --metrics`' keys: step, loss, mlm_loss,
nsp_loss, mlm_accuracy, nsp_accuracy, learning_rate, grad_norm) and --out, an HF folder (the
init folder's config.json / vocab / tokenizer files and the trained model.safetensors, decoder
tied, so absent) that `bertrt-convert` converts back.

  bertrt-convert --to hf init.brt -o init-hf
  bertrt pretrain --model init.brt ... --dump-instances run.inst --metrics bertrt.jsonl -o run.brt
  pretrain_twin.py --init init-hf --instances run.inst --learning-rate ... --warmup-steps ... \
      --metrics twin.jsonl --out twin-hf
  bertrt-convert twin-hf -o twin.brt
"""
import argparse
import json
import math
import os
import shutil
import signal
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import BertModel, Heads  # noqa: E402
from instance_dump import read_instances  # noqa: E402
from make_hf_models import load_folder, write_safetensors  # noqa: E402


class BertForPreTraining(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = Heads(c)

    def forward(self, r):
        """Losses and accuracies of one micro-batch `r` (a dump record, as torch tensors)."""
        h, pooled = self.bert(r["input_ids"], r["token_type_ids"], r["attention_mask"])
        B, T, C = h.shape
        rows = h.reshape(B * T, C)[r["masked_lm_positions"]]
        t = self.cls.predictions.transform(rows)
        logits = t @ self.bert.embeddings.word_embeddings.weight.t() + self.cls.predictions.bias
        labels = r["masked_lm_ids"]
        mlm = F.cross_entropy(logits, labels)
        out = {"mlm_loss": mlm, "mlm_correct": (logits.argmax(-1) == labels).sum().item(),
               "mlm_count": labels.numel()}
        nsp_labels = r["next_sentence_labels"]
        keep = nsp_labels >= 0  # −1: no NSP (bertrt's cross-entropy skips targets < 0)
        if keep.any():
            nsp_logits = self.cls.seq_relationship(pooled)[keep]
            out["nsp_loss"] = F.cross_entropy(nsp_logits, nsp_labels[keep])
            out["nsp_correct"] = (nsp_logits.argmax(-1) == nsp_labels[keep]).sum().item()
        else:
            out["nsp_loss"] = torch.zeros((), dtype=mlm.dtype)
            out["nsp_correct"] = 0
        out["nsp_count"] = int(keep.sum())
        return out


def add_dropout(model, p):
    """HF's dropout sites, as forward hooks on bert_reference's modules (train mode only)."""
    drop = lambda m, inp, out: F.dropout(out, p, m.training)  # noqa: E731
    model.bert.embeddings.register_forward_hook(drop)
    for layer in model.bert.encoder.layer:
        # The sub-layer outputs: dropout(dense(h)) before the residual LayerNorm.
        layer.attention.output.dense.register_forward_hook(drop)
        layer.output.dense.register_forward_hook(drop)
        # Attention probabilities: bert_reference computes softmax inline, so wrap it.
        attn = layer.attention.self
        orig = attn.forward

        def forward(x, mask_add, attn=attn, orig=orig):
            q, k, v = attn.split(attn.query(x)), attn.split(attn.key(x)), attn.split(attn.value(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(attn.hs) + mask_add
            probs = F.dropout(scores.softmax(-1), p, attn.training)
            return (probs @ v).permute(0, 2, 1, 3).contiguous().view(x.shape)

        attn.forward = forward


def load_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    keys = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "intermediate_size", "hidden_act", "max_position_embeddings", "type_vocab_size",
            "layer_norm_eps", "pad_token_id")
    return {k: c[k] for k in keys}


def linear_schedule(warmup, total):
    """transformers.get_linear_schedule_with_warmup's lambda."""
    def f(step):
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True, help="HF folder of the initial model (bertrt-convert --to hf)")
    ap.add_argument("--instances", required=True, help="bertrt pretrain --dump-instances file")
    ap.add_argument("--metrics", required=True, help="JSON lines to write, one per step")
    ap.add_argument("--out", help="HF folder to write the trained model to")
    ap.add_argument("--max-steps", type=int, help="total steps of the schedule (default: the dump's)")
    ap.add_argument("--learning-rate", type=float, default=1e-4)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--warmup-steps", type=int)
    g.add_argument("--warmup-ratio", type=float, help="ceil(ratio · steps), as bertrt (default 0.01)")
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    ap.add_argument("--adam-beta1", type=float, default=0.9)
    ap.add_argument("--adam-beta2", type=float, default=0.999)
    ap.add_argument("--adam-epsilon", type=float, default=1e-8)
    ap.add_argument("--clip-fp64", action="store_true",
                    help="clip with the float64 norm (as bertrt computes it) instead of "
                         "clip_grad_norm_'s float32 one, whose ~1e-4 relative error perturbs "
                         "every clipped step")
    ap.add_argument("--dropout", type=float, default=0.0, help="HF-style dropout (bertrt: none)")
    ap.add_argument("--seed", type=int, default=0, help="torch seed (dropout, --perturb-init)")
    ap.add_argument("--perturb-init", type=float, default=0.0,
                    help="multiply every initial weight by 1 + EPS·N(0,1): a control run that shows "
                         "how far float-noise-sized differences grow (e.g. 1e-7)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    header, records = read_instances(args.instances)
    K = header["accumulation"]
    steps = sorted({r["step"] for r in records})
    if steps != list(range(steps[0], steps[0] + len(steps))) or len(records) != K * len(steps):
        sys.exit(f"{args.instances}: steps are not consecutive with {K} micro-batches each")
    if steps[0] != 1:
        sys.exit(f"{args.instances}: starts at step {steps[0]} (a resumed run); the twin starts at 1")
    total = args.max_steps or len(steps)
    warmup = (args.warmup_steps if args.warmup_steps is not None
              else math.ceil(total * (args.warmup_ratio if args.warmup_ratio is not None else 0.01)))

    c = load_config(args.init)
    model = BertForPreTraining(c)
    sd = {k: v.float() for k, v in load_folder(args.init).items()
          if k not in ("bert.embeddings.position_ids", "cls.predictions.decoder.weight",
                       "cls.predictions.decoder.bias")}
    model.load_state_dict(sd, strict=True)
    if args.perturb_init > 0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 + args.perturb_init * torch.randn_like(p))
    if args.dropout > 0:
        add_dropout(model, args.dropout)
    model.train()

    named = list(model.named_parameters())
    no_decay = lambda n: "LayerNorm" in n or n.endswith("bias")  # noqa: E731  (params.cpp)
    opt = torch.optim.AdamW(
        [{"params": [p for n, p in named if not no_decay(n)], "weight_decay": args.weight_decay},
         {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}],
        lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2), eps=args.adam_epsilon)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_schedule(warmup, total))

    def tensors(r):
        return {k: torch.from_numpy(v).long() if k != "attention_mask" else torch.from_numpy(v)
                for k, v in r.items() if k not in ("step", "micro")}

    # SIGTERM / SIGINT end the run after the current step, and --out still gets the model (the
    # long runs are measurements that may have to stop early).
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))

    t0, done = time.time(), 0
    with open(args.metrics, "w") as log:
        for i, step in enumerate(steps):
            if stop:
                print(f"stopped before step {step} (signal)", flush=True)
                break
            opt.zero_grad(set_to_none=False)
            sums = dict(loss=0.0, mlm_loss=0.0, nsp_loss=0.0, mlm_correct=0, mlm_count=0,
                        nsp_correct=0, nsp_count=0)
            for r in records[i * K:(i + 1) * K]:
                o = model(tensors(r))
                loss = o["mlm_loss"] + o["nsp_loss"]
                (loss / K).backward()
                sums["loss"] += loss.item() / K
                sums["mlm_loss"] += o["mlm_loss"].item() / K
                sums["nsp_loss"] += o["nsp_loss"].item() / K
                for k in ("mlm_correct", "mlm_count", "nsp_correct", "nsp_count"):
                    sums[k] += o[k]
            # bertrt updates every tensor each step (weight decay and moments included), also
            # those the loss does not reach (the NSP head and pooler without NSP): so does AdamW
            # when their gradient is zero rather than None.
            for _, p in named:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            lr = sched.get_last_lr()[0]
            # Logged in float64 as bertrt computes it; torch's float32 norm (used for the clip
            # below, as in HF) is ~1e-4 off on BERT-tiny's 4.4 M gradients, a scale Adam nearly
            # cancels (m/√v is scale-invariant but for ε).
            norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for _, p in named))
            if args.max_grad_norm > 0 and args.clip_fp64:
                coef = args.max_grad_norm / (norm + 1e-6)  # clip_grad_norm_'s formula
                if coef < 1:
                    for _, p in named:
                        p.grad.mul_(coef)
            elif args.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            opt.step()
            sched.step()
            rec = {"step": step, "loss": sums["loss"], "mlm_loss": sums["mlm_loss"],
                   "nsp_loss": sums["nsp_loss"],
                   "mlm_accuracy": sums["mlm_correct"] / max(1, sums["mlm_count"]),
                   "nsp_accuracy": sums["nsp_correct"] / max(1, sums["nsp_count"]),
                   "learning_rate": lr, "grad_norm": norm,
                   "elapsed_seconds": time.time() - t0}
            done = step
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if step % 100 == 0 or step == steps[-1]:
                print(f"step {step}/{total}: loss {rec['loss']:.4f} mlm {rec['mlm_loss']:.4f} "
                      f"nsp {rec['nsp_loss']:.4f} ({rec['elapsed_seconds']:.0f} s)", flush=True)

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name in os.listdir(args.init):
            if name != "model.safetensors":
                shutil.copy(os.path.join(args.init, name), os.path.join(args.out, name))
        tmp = os.path.join(args.out, "model.safetensors.tmp")
        write_safetensors(tmp, {n: p.detach().contiguous() for n, p in named}, {"format": "pt"})
        os.replace(tmp, os.path.join(args.out, "model.safetensors"))
        print(f"wrote {args.out} (the model after step {done})")


if __name__ == "__main__":
    main()
