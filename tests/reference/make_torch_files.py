#!/usr/bin/python3
"""Writes torch.save files (zip and legacy) and what a reader must find in them.

Usage: make_torch_files.py OUTDIR [SAMPLE_FILE ...]

For each case, the real writer (torch.save from Debian python3-torch) saves the object in four
ways: zip and legacy (_use_new_zipfile_serialization=False), each with pickle protocol 2 (torch's
default) and 4 (FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL). The expected tensors (dotted
names, C-order little-endian bytes) go to CASE.expected.safetensors, written here by hand. Each
SAMPLE_FILE (real files from ../shared/ckpt) is loaded with torch.load (weights_only when torch can) and its
expected tensors written the same way. Also malicious files (os.system via REDUCE, nested
torch.storage._load_from_bytes) and malformed ones. index.json lists everything.
"""
import collections
import io
import json
import os
import pickle
import struct
import sys
import zipfile

import torch
import torch.nn as nn

ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
            torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
            torch.uint8: "U8", torch.bool: "BOOL"}


def flatten(obj, prefix=""):
    """(name, tensor) in the reader's order: dict keys (str/int) and list indexes joined by '.'."""
    join = lambda part: f"{prefix}.{part}" if prefix else str(part)
    if isinstance(obj, torch.Tensor):
        return [(prefix, obj)]
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += flatten(v, join(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += flatten(v, join(i))
    return out


def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16; same bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, named):
    header, data = {}, b""
    for name, t in named:
        raw = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def cases():
    g = torch.Generator().manual_seed(1234)
    rnd = lambda *s: torch.randn(*s, generator=g)
    ints = lambda lo, hi, s, dt: torch.randint(lo, hi, s, generator=g, dtype=dt)
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4e38])
    dtypes = collections.OrderedDict([
        ("f32", rnd(3, 5)), ("f32_special", special), ("f16", rnd(3, 5).half()),
        ("bf16", rnd(3, 5).bfloat16()), ("f64", rnd(3, 5).double()),
        ("i64", ints(-2**62, 2**62, (4,), torch.int64)), ("i32", ints(-2**31, 2**31 - 1, (2, 3), torch.int32)),
        ("i16", ints(-2**15, 2**15 - 1, (5,), torch.int16)), ("i8", ints(-128, 127, (6,), torch.int8)),
        ("u8", ints(0, 255, (2, 2, 2), torch.uint8)), ("bool", rnd(7) > 0)])

    base = rnd(4, 6)  # one storage under base, transposed, row, slice, step and scalar_view
    views = collections.OrderedDict([
        ("transposed", base.t()), ("base", base), ("row", base[2]), ("cols", base[:, 1:4]),
        ("step", base[::2, ::3]), ("scalar_view", base[1, 2]), ("scalar", torch.tensor(3.25)),
        ("empty", torch.zeros(0, 4)), ("empty_view", base[:, 6:]), ("rank4", rnd(2, 3, 4, 5)),
        ("rank4_permuted", rnd(2, 3, 4, 5).permute(0, 2, 3, 1)), ("broadcast", rnd(3, 1).expand(3, 4)),
        ("f16_transposed", rnd(3, 4).half().t()), ("i64_strided", torch.arange(20)[5:15:3]),
        ("bf16_offset", rnd(10).bfloat16()[3:7])])

    torch.manual_seed(0)
    module = nn.Sequential(collections.OrderedDict([
        ("emb", nn.Embedding(10, 4)), ("fc", nn.Linear(4, 3)), ("norm", nn.LayerNorm(3)),
        ("bn", nn.BatchNorm1d(3))]))
    state_dict = module.state_dict()  # OrderedDict with _metadata (BUILD), int64 num_batches_tracked

    tied = rnd(5, 4)
    p = nn.Parameter(rnd(2, 2))
    nested = {"state_dict": state_dict, "epoch": 3, "lr": 0.5, "names": ["a", "b"],
              "history": [rnd(2), (rnd(3), "x")], "args": {"hidden": 4, "flag": True, "none": None},
              7: rnd(2), "decoder.weight": tied, "embeddings.weight": tied,
              "param": p}  # an nn.Parameter pickles through torch._utils._rebuild_parameter
    return {"dtypes": dtypes, "views": views, "module": state_dict, "nested": nested}


def storage_itemsizes(pkl):
    """storage key -> element size, from the pickle's persistent ids (our own files only)."""
    sizes = {}

    class Scan(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "collections" and name == "OrderedDict":
                return collections.OrderedDict
            if name.endswith("Storage"):
                return getattr(torch, name)
            return lambda *a: None

        def persistent_load(self, pid):
            sizes[pid[2]] = pid[1]().element_size()

    Scan(io.BytesIO(pkl)).load()
    return sizes


def rewrite_zip(src, dst, edit):
    """Copies zip `src` to `dst`, passing each (name, bytes) through edit (None drops it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = edit(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info.filename, data)


def big_endian_copy(src, dst):
    with zipfile.ZipFile(src) as z:
        pkl_name = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        sizes = storage_itemsizes(z.read(pkl_name))
    prefix = pkl_name[: -len("data.pkl")]

    def edit(name, data):
        if name == prefix + "byteorder":
            return None  # rewritten below (torch 1.13 writes none: older readers assume little)
        if name.startswith(prefix + "data/"):
            n = sizes[name[len(prefix + "data/"):]]
            return b"".join(data[i:i + n][::-1] for i in range(0, len(data), n))
        return data
    rewrite_zip(src, dst, edit)
    with zipfile.ZipFile(dst, "a", zipfile.ZIP_STORED) as z:
        z.writestr(prefix + "byteorder", b"big")


def zip_layout(path, pkl):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/version", b"3\n")


def legacy_layout(path, pkl):
    """The legacy header pickles (magic, protocol 1001, sys_info), then `pkl`, then no storages."""
    with open(path, "wb") as f:
        for obj in (0x1950a86a20f9469cfc6c, 1001,
                    {"protocol_version": 1001, "little_endian": True,
                     "type_sizes": {"short": 2, "int": 4, "long": 8}}):
            pickle.dump(obj, f, protocol=2)
        f.write(pkl)
        pickle.dump([], f, protocol=2)


def os_system_pickle(command):
    """REDUCE of GLOBAL 'os system' (written out by hand: CPython's pickler names it posix.system)."""
    cmd = command.encode()
    return (b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R.")


class Evil:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def make_malicious(out, index):
    """Files whose pickles run `touch MARKER` under pickle/torch.load; the reader must refuse."""
    mal = index["malicious"] = []

    def add(name, global_name, marker, proof=None):
        mal.append({"file": name, "global": global_name, "marker": os.path.join(out, marker),
                    "proof": proof})

    for fmt, write in (("zip", zip_layout), ("legacy", legacy_layout)):
        marker = f"os_system_{fmt}.marker"
        write(os.path.join(out, f"os_system.{fmt}.pt"), os_system_pickle("touch " + os.path.join(out, marker)))
        add(f"os_system.{fmt}.pt", "os.system", marker)
        # The real writer: a state dict with a tensor, then an object whose __reduce__ is
        # os.system (CPython pickles it as posix.system).
        marker = f"in_state_dict_{fmt}.marker"
        obj = {"w": torch.ones(2), "x": Evil("touch " + os.path.join(out, marker))}
        torch.save(obj, os.path.join(out, f"in_state_dict.{fmt}.pt"), _use_new_zipfile_serialization=fmt == "zip")
        # Proof that the payload is live: the same file with another marker, run by torch.load.
        proof_marker = os.path.join(out, f"proof_{fmt}.marker")
        proof = os.path.join(out, f"proof.{fmt}.pt")
        torch.save({"w": torch.ones(2), "x": Evil("touch " + proof_marker)}, proof,
                   _use_new_zipfile_serialization=fmt == "zip")
        torch.load(proof)
        os.remove(proof)
        add(f"in_state_dict.{fmt}.pt", f"{os.system.__module__}.system", marker, proof_marker)

    # A storage pickled with plain pickle reduces to torch.storage._load_from_bytes(torch.save bytes).
    pkl = pickle.dumps({"w": torch.zeros(3).storage()}, protocol=2)
    assert b"_load_from_bytes" in pkl
    zip_layout(os.path.join(out, "load_from_bytes.zip.pt"), pkl)
    add("load_from_bytes.zip.pt", "torch.storage._load_from_bytes", "none.marker")


STORAGE = object()  # stands for a storage in hand-written pickles


class Rebuild:
    """Pickles as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, {})."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


def legacy_view(path):
    """Root storage 'root' = [0..5]; view "v" = root[2:5] = [2, 3, 4]; a = v[1:3] = [3, 4], b = v[2] = 4."""
    view = object()

    class WithView(pickle.Pickler):
        def persistent_id(self, obj):
            if obj is view:
                return ("storage", torch.FloatStorage, "root", "cpu", 6, ("v", 2, 3))
            return None

    buf = io.BytesIO()
    WithView(buf, protocol=2).dump({"a": Rebuild(view, 1, (2,), (1,)), "b": Rebuild(view, 2, (), ())})
    with open(path, "wb") as f:
        for obj in (0x1950a86a20f9469cfc6c, 1001,
                    {"protocol_version": 1001, "little_endian": True,
                     "type_sizes": {"short": 2, "int": 4, "long": 8}}):
            pickle.dump(obj, f, protocol=2)
        f.write(buf.getvalue())
        pickle.dump(["root"], f, protocol=2)
        f.write(struct.pack("<q6f", 6, 0, 1, 2, 3, 4, 5))


def make_malformed(out, index):
    bad = index["malformed"] = {}
    src = os.path.join(out, "dtypes.zip.p2.pt")
    with zipfile.ZipFile(src) as z:
        prefix = [n for n in z.namelist() if n.endswith("/data.pkl")][0][: -len("data.pkl")]

    rewrite_zip(src, os.path.join(out, "no_data_pkl.zip.pt"), lambda n, d: None if n == prefix + "data.pkl" else d)
    bad["no_data_pkl"] = {"file": "no_data_pkl.zip.pt", "record": prefix + "data.pkl"}
    rewrite_zip(src, os.path.join(out, "no_storage.zip.pt"), lambda n, d: None if n == prefix + "data/3" else d)
    bad["no_storage"] = {"file": "no_storage.zip.pt", "record": prefix + "data/3"}
    rewrite_zip(src, os.path.join(out, "short_storage.zip.pt"),
                lambda n, d: d[: len(d) // 2] if n == prefix + "data/0" else d)
    bad["short_storage"] = {"file": "short_storage.zip.pt", "record": prefix + "data/0"}

    # A tensor of 10 elements on a 4-element storage (pickled by hand: torch.save would not).
    class WithStorage(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", 4) if obj is STORAGE else None

    buf = io.BytesIO()
    WithStorage(buf, protocol=2).dump({"w": Rebuild(STORAGE, 2, (10,), (1,))})
    with zipfile.ZipFile(os.path.join(out, "overrun.zip.pt"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/data/0", struct.pack("<4f", 1, 2, 3, 4))
    bad["overrun"] = {"file": "overrun.zip.pt"}

    # Valid torch.save files whose tensors stand for far more bytes than they store: 300 views of
    # one 1 MB storage (a 300-layer model from one matrix), and one float broadcast to 256 MB.
    base = torch.zeros(1 << 18)
    torch.save({f"layer.{i}.weight": base.view(512, 512) for i in range(300)},
               os.path.join(out, "aliased.zip.pt"))
    bad["aliased"] = {"file": "aliased.zip.pt"}
    torch.save({"w": torch.zeros(1).expand(1 << 26)}, os.path.join(out, "broadcast.zip.pt"))
    bad["broadcast"] = {"file": "broadcast.zip.pt"}

    legacy = open(os.path.join(out, "dtypes.legacy.p2.pt"), "rb").read()
    assert legacy[2:4] == b"\x8a\x0a"
    with open(os.path.join(out, "bad_magic.legacy.pt"), "wb") as f:  # one byte of the magic changed
        f.write(legacy[:5] + bytes([legacy[5] ^ 0x01]) + legacy[6:])
    bad["bad_magic"] = {"file": "bad_magic.legacy.pt"}
    with open(os.path.join(out, "truncated.legacy.pt"), "wb") as f:  # last storage cut short
        f.write(legacy[:-3])
    bad["truncated_storage"] = {"file": "truncated.legacy.pt"}


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):  # markers of an earlier run must not hide or fake a result
        if f.endswith(".marker"):
            os.remove(os.path.join(out, f))
    index = {"torch_version": torch.__version__, "files": [], "samples": []}
    for name, obj in cases().items():
        expected = f"{name}.expected.safetensors"
        write_safetensors(os.path.join(out, expected), flatten(obj))
        for fmt in ("zip", "legacy"):
            for proto in (2, 4):
                file = f"{name}.{fmt}.p{proto}.pt"
                torch.save(obj, os.path.join(out, file), pickle_protocol=proto,
                           _use_new_zipfile_serialization=fmt == "zip")
                index["files"].append({"file": file, "format": "torch-" + fmt, "expected": expected})
        if name == "dtypes":  # a big-endian zip: byteorder "big" and every storage byte-swapped
            big_endian_copy(os.path.join(out, "dtypes.zip.p2.pt"), os.path.join(out, "dtypes.big.zip.pt"))
            index["files"].append({"file": "dtypes.big.zip.pt", "format": "torch-zip", "expected": expected})
    # A legacy storage view (view_metadata in the persistent id; old torch wrote these, 1.13 only
    # reads them): written by hand, expected values from torch.load.
    legacy_view(os.path.join(out, "legacy_view.pt"))
    named = flatten(torch.load(os.path.join(out, "legacy_view.pt")))
    assert [t.tolist() for _, t in named] == [[3.0, 4.0], 4.0]
    write_safetensors(os.path.join(out, "legacy_view.expected.safetensors"), named)
    index["files"].append({"file": "legacy_view.pt", "format": "torch-legacy",
                           "expected": "legacy_view.expected.safetensors"})

    os.makedirs(os.path.join(out, "samples"), exist_ok=True)
    for path in sys.argv[2:]:
        expected = os.path.join("samples", os.path.basename(os.path.dirname(path)) + "__" +
                                os.path.basename(path) + ".expected.safetensors")
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            # torch 1.13's weights_only refuses BINFLOAT (a float next to the weights); these are
            # the project's vetted sample files (../shared/ckpt/README.md), so a full load is fine.
            obj = torch.load(path, map_location="cpu")
        write_safetensors(os.path.join(out, expected), flatten(obj))
        index["samples"].append({"file": path, "expected": expected, "count": len(flatten(obj))})

    make_malicious(out, index)
    make_malformed(out, index)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)


if __name__ == "__main__":
    main()
