"""Reader of `bertrt pretrain --dump-instances FILE` (format: src/train/instance_dump.h), numpy only.

    from instance_dump import read_instances
    header, records = read_instances(path)   # header: seq_len, micro_batch_size, accumulation
    for r in records: r["step"], r["micro"], r["input_ids"] ([rows, T] int32), ...
"""
import struct

import numpy as np

MAGIC = b"BRTINST1"


def read_instances(path):
    """(header dict, list of record dicts), records in training order (K per optimizer step)."""
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        raise ValueError(f"{path}: not a bertrt instance dump (magic {data[:8]!r})")
    version, T, b, K = struct.unpack_from("<4i", data, 8)
    if version != 1:
        raise ValueError(f"{path}: dump version {version}, this reader knows 1")
    header = {"seq_len": T, "micro_batch_size": b, "accumulation": K}
    records, off = [], 24

    def ints(n):
        nonlocal off
        a = np.frombuffer(data, dtype="<i4", count=n, offset=off).copy()
        off += 4 * n
        return a

    while off < len(data):
        if off + 20 > len(data):
            raise ValueError(f"{path}: torn record header at byte {off}")
        (step,) = struct.unpack_from("<q", data, off)
        micro, rows, P = struct.unpack_from("<3i", data, off + 8)
        off += 20
        r = {"step": step, "micro": micro}
        for key in ("input_ids", "token_type_ids", "attention_mask"):
            r[key] = ints(rows * T).reshape(rows, T)
        r["masked_lm_positions"] = ints(P)
        r["masked_lm_ids"] = ints(P)
        r["next_sentence_labels"] = ints(rows)
        records.append(r)
    return header, records
