#!/usr/bin/env python3
"""PyTorch reference for bertrt's quantization numerics (tests/unit/quant_torch_test.cpp).

Writes one safetensors file of inputs and PyTorch's outputs:
  pt{i}.*   torch.fake_quantize_per_tensor_affine forward and backward (the STE mask as the
            gradient of ones), torch.quantize_per_tensor integers for the uint8 cases; inputs hold
            exact .5 ties, values at and just past both clamp boundaries, and values where
            x·(1/scale) and x/scale round differently (torch multiplies by the float reciprocal).
  pc{i}.*   per-channel symmetric int8 [-127, 127]: scales from PerChannelMinMaxObserver
            (fresh, so they are the current weights' max|w| / 127) and
            torch.fake_quantize_per_channel_affine forward/backward, axis 0.
  obs{j}.*  torch.ao.quantization.FakeQuantize with MovingAverageMinMaxObserver (quint8 [0, 255],
            per-tensor affine) over a sequence of batches, observer disabled after `freeze` steps:
            running min/max, scale, zero point, fake-quant output and input gradient per step.
  gemm{k}.* exact integer products of uint8 [M, K] and int8 [N, K] (int64 matmul), including
            the all-255 x 127 case where vpmaddubsw's int16 pair sums would saturate.

Usage: quant_reference.py --out FILE.safetensors
"""
import argparse
import json
import struct

import numpy as np
import torch
from torch.ao.quantization import FakeQuantize
from torch.ao.quantization.observer import MovingAverageMinMaxObserver, PerChannelMinMaxObserver

F32 = np.float32


def write_safetensors(path, tensors, metadata):
    dtypes = {torch.float32: "F32", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8",
              torch.int8: "I8"}
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


def recip_vs_div_values(scale, lo, hi):
    """Floats near (k + 0.5)·scale where round(x·(1/scale)) != round(x/scale) in float32."""
    s = F32(scale)
    inv = F32(1) / s
    out = []
    base = (np.arange(lo, hi).astype(F32) + F32(0.5)) * s
    for direction in (np.inf, -np.inf):
        cand = base.copy()
        for _ in range(40):
            cand = np.nextafter(cand, F32(direction)).astype(F32)
            a = np.rint((cand / s).astype(F32))
            b = np.rint((cand * inv).astype(F32))
            out.extend(cand[a != b].tolist())
    return np.array(out, dtype=F32)


def per_tensor_inputs(scale, zp, qmin, qmax, gen):
    s = F32(scale)
    k = np.arange(qmin - zp - 3, qmax - zp + 4).astype(F32)
    ties = (k + F32(0.5)) * s                       # exact ties when scale is a power of two
    grid = k * s                                    # exact codes, incl. qmin/qmax themselves
    near = np.concatenate([np.nextafter(ties, F32(np.inf)), np.nextafter(ties, F32(-np.inf))])
    edges = np.array([(qmin - zp - 0.5) * s, (qmax - zp + 0.5) * s, (qmax - zp + 0.49) * s,
                      (qmin - zp - 0.49) * s, (qmin - zp - 0.51) * s, (qmax - zp + 0.51) * s,
                      0.0, -0.0, 1e6, -1e6], dtype=F32)
    # Not beyond ~1e18·scale: torch casts the rounded value to int64 first, and a value past
    # 2^63 wraps to INT64_MIN, so +1e30 comes out as qmin (bertrt saturates it to qmax).
    rnd = (torch.randn(257, generator=gen) * float(s) * (qmax - qmin) / 3).numpy().astype(F32)
    return np.concatenate([ties, grid, near, edges, rnd,
                           recip_vs_div_values(scale, qmin - zp - 2, qmax - zp + 2)]).astype(F32)


def add_per_tensor(out, i, x, scale, zp, qmin, qmax, gen):
    x = torch.tensor(x, requires_grad=True)
    y = torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)
    dy = torch.randn(x.shape, generator=gen)
    y.backward(dy)
    out[f"pt{i}.x"] = x.detach()
    out[f"pt{i}.scale"] = torch.tensor([scale], dtype=torch.float32)
    out[f"pt{i}.zero_point"] = torch.tensor([zp], dtype=torch.int32)
    out[f"pt{i}.range"] = torch.tensor([qmin, qmax], dtype=torch.int32)
    out[f"pt{i}.out"] = y.detach()
    out[f"pt{i}.dy"] = dy
    out[f"pt{i}.dx"] = x.grad.detach()
    if (qmin, qmax) == (0, 255):
        q = torch.quantize_per_tensor(x.detach(), scale, zp, torch.quint8)
        out[f"pt{i}.q"] = q.int_repr()


def add_per_channel(out, i, w, scale, gen):
    w = w.clone().requires_grad_(True)
    if scale is None:  # the current weights' range: a fresh observer sees exactly this batch
        ob = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                      qscheme=torch.per_channel_symmetric, quant_min=-127,
                                      quant_max=127)
        ob(w.detach())
        scale, _ = ob.calculate_qparams()
    zp = torch.zeros(w.shape[0], dtype=torch.int32)
    y = torch.fake_quantize_per_channel_affine(w, scale, zp, 0, -127, 127)
    dy = torch.randn(w.shape, generator=gen)
    y.backward(dy)
    out[f"pc{i}.w"] = w.detach()
    out[f"pc{i}.scale"] = scale.to(torch.float32)
    out[f"pc{i}.out"] = y.detach()
    out[f"pc{i}.dy"] = dy
    out[f"pc{i}.dx"] = w.grad.detach()


def add_observer_sequence(out, j, batches, momentum, freeze, gen):
    fq = FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                      dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                      averaging_constant=momentum)
    rows = {"min": [], "max": [], "scale": [], "zero_point": [], "out": [], "dy": [], "dx": []}
    for step, b in enumerate(batches):
        if step == freeze:
            fq.disable_observer()
        x = b.clone().requires_grad_(True)
        y = fq(x)
        dy = torch.randn(x.shape, generator=gen)
        y.backward(dy)
        ob = fq.activation_post_process
        rows["min"].append(float(ob.min_val))
        rows["max"].append(float(ob.max_val))
        rows["scale"].append(float(fq.scale[0]))
        rows["zero_point"].append(int(fq.zero_point[0]))
        rows["out"].append(y.detach())
        rows["dy"].append(dy)
        rows["dx"].append(x.grad.detach())
    out[f"obs{j}.batches"] = torch.stack(batches)
    out[f"obs{j}.momentum"] = torch.tensor([momentum], dtype=torch.float32)
    out[f"obs{j}.freeze"] = torch.tensor([freeze], dtype=torch.int32)
    for k in ("min", "max", "scale"):
        out[f"obs{j}.{k}"] = torch.tensor(rows[k], dtype=torch.float32)
    out[f"obs{j}.zero_point"] = torch.tensor(rows["zero_point"], dtype=torch.int32)
    for k in ("out", "dy", "dx"):
        out[f"obs{j}.{k}"] = torch.stack(rows[k])


def add_gemm(out, k, a, b):
    c = a.to(torch.int64) @ b.to(torch.int64).T
    assert c.abs().max() < 2**31
    out[f"gemm{k}.a"] = a
    out[f"gemm{k}.b"] = b
    out[f"gemm{k}.c"] = c.to(torch.int32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(args.seed)
    out = {}

    # Per-tensor fake-quant: the activation range [0, 255] with zero points inside and at the
    # ends, a float scale (0.1: reciprocal vs division differ), and signed ranges.
    pt = [(0.0625, 77, 0, 255), (0.1, 10, 0, 255), (0.03125, 0, 0, 255), (0.25, 255, 0, 255),
          (0.0123, 128, 0, 255), (0.0625, 0, -128, 127), (0.1, 0, -127, 127)]
    for i, (scale, zp, qmin, qmax) in enumerate(pt):
        add_per_tensor(out, i, per_tensor_inputs(scale, zp, qmin, qmax, gen), scale, zp, qmin,
                       qmax, gen)

    # Per-channel: rows of very different magnitude, a zero row (scale eps), a single spike, a
    # row whose max is negative; then given scales that clamp (mask 0) and hit exact ties.
    w = torch.randn(9, 37, generator=gen)
    w[1] *= 1e-3
    w[2] = 0.0
    w[3] = 0.0
    w[3, 5] = 0.7
    w[4] = -w[4].abs() * 5
    w[5] *= 40
    add_per_channel(out, 0, w, None, gen)
    w2 = torch.randn(5, 300, generator=gen) * 4
    w2[0] = (torch.arange(300, dtype=torch.float32) - 150 + 0.5) / 16   # ties at scale 2^-4
    w2[1] = (torch.arange(300, dtype=torch.float32) - 150) / 16          # grid incl. ±127
    rvd = torch.tensor(recip_vs_div_values(0.1, -128, 128)[:300])   # x·(1/0.1) vs x/0.1 differ
    w2[3, :len(rvd)] = rvd
    s2 = torch.tensor([0.0625, 0.0625, 0.01, 0.1, 0.03125], dtype=torch.float32)
    add_per_channel(out, 1, w2, s2, gen)

    # Observer sequences: LayerNorm-like (shifted), GELU outputs (≥ -0.17), growing ranges (the
    # moving average lags, so later batches clamp), a constant batch and an all-zero batch.
    def gelu(t):
        return torch.nn.functional.gelu(t)
    seq0 = [torch.randn(97, generator=gen) * (1 + 0.3 * s) + 0.5 for s in range(12)]
    seq0[6] = torch.full((97,), 2.5)
    add_observer_sequence(out, 0, seq0, 0.01, 8, gen)
    seq1 = [gelu(torch.randn(64, generator=gen) * (1 + s)) for s in range(10)]
    seq1[3] = torch.zeros(64)
    add_observer_sequence(out, 1, seq1, 0.1, 6, gen)
    seq2 = [torch.randn(33, generator=gen) * 3 - 1 for _ in range(6)]
    add_observer_sequence(out, 2, seq2, 1.0, 100, gen)

    # Integer GEMMs: random (odd sizes) and the saturation case.
    add_gemm(out, 0, torch.randint(0, 256, (7, 37), generator=gen, dtype=torch.int64).to(torch.uint8),
             torch.randint(-128, 128, (5, 37), generator=gen, dtype=torch.int64).to(torch.int8))
    add_gemm(out, 1, torch.full((3, 64), 255, dtype=torch.uint8),
             torch.full((2, 64), 127, dtype=torch.int8))

    write_safetensors(args.out, out, {"torch_version": torch.__version__})


if __name__ == "__main__":
    main()
