#!/usr/bin/env python3
"""Reference trajectories of the two optimizers of `bertrt pretrain`, on fixed gradients.

Reads a JSON case on stdin:
  {"kind": "adamw" | "bert", "lr", "warmup", "total", "weight_decay", "max_grad_norm",
   "beta1", "beta2", "eps",
   "tensors": [{"name", "decay": bool, "init": [floats]}],
   "grads": [[[floats] per tensor] per step]}
and prints one JSON object: {"lr": [per step], "norm": [per step], "params": [[flat] per step]}.

adamw: torch.optim.AdamW with two param groups (weight decay on the decayed tensors only),
       torch.optim.lr_scheduler.LambdaLR with transformers' get_linear_schedule_with_warmup
       lambda, torch.nn.utils.clip_grad_norm_ before each step (skipped when max_grad_norm <= 0),
       as Hugging Face Trainer does.
bert:  google-research/bert optimization.py written out in float32 numpy: create_optimizer's
       schedule (polynomial_decay power 1 over all steps, overridden by the linear warm-up while
       global_step < warmup), tf.clip_by_global_norm, AdamWeightDecayOptimizer.apply_gradients
       (no bias correction; update += weight_decay * param before the lr scaling).
"""
import json
import sys

import numpy as np


def adamw(case):
    import torch

    ps = [torch.nn.Parameter(torch.tensor(t["init"], dtype=torch.float32)) for t in case["tensors"]]
    decay = [t["decay"] for t in case["tensors"]]
    opt = torch.optim.AdamW(
        [{"params": [p for p, d in zip(ps, decay) if d], "weight_decay": case["weight_decay"]},
         {"params": [p for p, d in zip(ps, decay) if not d], "weight_decay": 0.0}],
        lr=case["lr"], betas=(case["beta1"], case["beta2"]), eps=case["eps"])
    warmup, total = case["warmup"], case["total"]

    def lr_lambda(step):  # transformers.optimization.get_linear_schedule_with_warmup
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    out = {"lr": [], "norm": [], "params": []}
    for grads in case["grads"]:
        for p, g in zip(ps, grads):
            p.grad = torch.tensor(g, dtype=torch.float32)
        if case["max_grad_norm"] > 0:
            norm = torch.nn.utils.clip_grad_norm_(ps, case["max_grad_norm"]).item()
        else:
            norm = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in ps)))
        out["lr"].append(sched.get_last_lr()[0])
        out["norm"].append(norm)
        opt.step()
        sched.step()
        out["params"].append([x for p in ps for x in p.detach().flatten().tolist()])
    return out


def bert(case):
    f32 = np.float32
    params = [np.array(t["init"], dtype=f32) for t in case["tensors"]]
    decay = [t["decay"] for t in case["tensors"]]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    init_lr, warmup, total = f32(case["lr"]), case["warmup"], case["total"]
    b1, b2, eps, wd = f32(case["beta1"]), f32(case["beta2"]), f32(case["eps"]), f32(case["weight_decay"])
    clip = f32(case["max_grad_norm"])
    out = {"lr": [], "norm": [], "params": []}
    for global_step, grads in enumerate(case["grads"]):
        # create_optimizer: polynomial_decay(init_lr, global_step, total, end 0, power 1).
        step = f32(min(global_step, total))
        lr = (init_lr - f32(0)) * (f32(1) - step / f32(total)) ** f32(1)
        if warmup:
            warmup_lr = init_lr * (f32(global_step) / f32(warmup))
            is_warmup = f32(1.0 if global_step < warmup else 0.0)
            lr = (f32(1) - is_warmup) * lr + is_warmup * warmup_lr
        g = [np.array(x, dtype=f32) for x in grads]
        # tf.clip_by_global_norm(grads, clip_norm): global_norm = sqrt(sum of 2 * l2_loss).
        norm = np.sqrt(sum(f32(2) * (np.sum(x * x) / f32(2)) for x in g), dtype=f32)
        if clip > 0:
            scale = clip * min(f32(1) / norm, f32(1) / clip)
            g = [x * scale for x in g]
        out["lr"].append(float(lr))
        out["norm"].append(float(norm))
        for i in range(len(params)):  # AdamWeightDecayOptimizer.apply_gradients
            m[i] = b1 * m[i] + (f32(1) - b1) * g[i]
            v[i] = b2 * v[i] + (f32(1) - b2) * np.square(g[i])
            update = m[i] / (np.sqrt(v[i]) + eps)
            if decay[i]:  # _do_use_weight_decay: not LayerNorm, not bias
                update += wd * params[i]
            params[i] = params[i] - lr * update
        out["params"].append([float(x) for p in params for x in p.flatten()])
    return out


def main():
    case = json.load(sys.stdin)
    out = adamw(case) if case["kind"] == "adamw" else bert(case)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
