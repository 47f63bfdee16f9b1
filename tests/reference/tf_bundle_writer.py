"""A TensorFlow 1 tensor bundle (PREFIX.index + PREFIX.data-00000-of-00001) written by hand, with
no TensorFlow, for converter tests: the layout of tensorflow/core/util/tensor_bundle (an SSTable
index in leveldb's table format, BundleHeaderProto under the empty key, one BundleEntryProto per
tensor with its masked crc32c) that tests/unit/convert_tf_test.cpp reads from real TF files.

write_bundle(prefix, {name: numpy array}) writes float32 and int64 tensors, keys sorted bytewise,
one uncompressed data block with leveldb's restart interval of 16 and prefix-compressed keys.
"""
import struct

import numpy as np

_DT = {np.dtype("float32"): 1, np.dtype("int64"): 9}  # types.proto DT_FLOAT, DT_INT64


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli, reflected
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask(crc):  # leveldb/TF crc32c::Mask
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _fv(num, v):  # varint field; proto3 leaves zero values out, as TF's writer does
    return varint(num << 3) + varint(v) if v else b""


def _fb(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def _entry(array, offset, data):
    shape = b"".join(_fb(2, _fv(1, d)) for d in array.shape)  # TensorShapeProto.dim.size
    return (_fv(1, _DT[array.dtype]) + _fb(2, shape) + _fv(4, offset) + _fv(5, len(data)) +
            varint(6 << 3 | 5) + struct.pack("<I", mask(crc32c(data))))


def _block(items, restart_interval=16):
    out, restarts, prev = bytearray(), [], b""
    for i, (key, value) in enumerate(items):
        shared = 0
        if i % restart_interval:
            while shared < min(len(key), len(prev)) and key[shared] == prev[shared]:
                shared += 1
        else:
            restarts.append(len(out))
        out += varint(shared) + varint(len(key) - shared) + varint(len(value)) + key[shared:] + value
        prev = key
    restarts = restarts or [0]
    out += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
    return bytes(out)


def _with_trailer(block):  # type 0 (no compression) + masked crc32c of block and type byte
    return block + b"\x00" + struct.pack("<I", mask(crc32c(block + b"\x00")))


def write_bundle(prefix, tensors):
    names = sorted(tensors, key=lambda n: n.encode())
    data, items = bytearray(), []
    header = _fv(1, 1) + _fb(3, _fv(1, 1))  # num_shards 1, little-endian, version {producer 1}
    items.append((b"", header))
    for name in names:
        a = np.ascontiguousarray(tensors[name])
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        items.append((name.encode(), _entry(a, len(data), raw)))
        data += raw
    with open(f"{prefix}.data-00000-of-00001", "wb") as f:
        f.write(bytes(data))
    data_block = _block(items)
    meta_block = _block([])
    f = bytearray(_with_trailer(data_block))
    meta_off = len(f)
    f += _with_trailer(meta_block)
    index_block = _block([(items[-1][0], varint(0) + varint(len(data_block)))])
    index_off = len(f)
    f += _with_trailer(index_block)
    handles = varint(meta_off) + varint(len(meta_block)) + varint(index_off) + varint(len(index_block))
    f += handles + b"\x00" * (40 - len(handles)) + struct.pack("<Q", 0xDB4775248B80FB57)
    with open(f"{prefix}.index", "wb") as out:
        out.write(bytes(f))
