#!/usr/bin/env python3
"""Decodes a .npy, .npz or .safetensors file with Python's standard library
alone and prints it as JSON, so the tests can check what our writers produce
against an independent reader: {"__metadata__": {...}, name: {"dtype",
"shape", "values"}}. Exits non-zero on anything NumPy or the safetensors
library would reject.

Usage: inspect_file.py PATH [KEY]
With KEY, an .npz is CRC-checked whole but only KEY is decoded, and
"__entries__" gives the number of entries (quick for huge archives).
"""
import ast
import json
import math
import struct
import sys
import zipfile

NPY_FORMATS = {"<f4": "f", "<f2": "e", "<i4": "i", "<i8": "q"}
ST_FORMATS = {"F32": "f", "F16": "e", "I32": "i", "I64": "q", "BF16": "H"}


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def decode_npy(data):
    assert data[:6] == b"\x93NUMPY", "bad magic"
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    assert (start + hlen) % 64 == 0, "array not 64-byte aligned"
    assert data[start + hlen - 1:start + hlen] == b"\n", "no final newline"
    assert set(header) == {"descr", "fortran_order", "shape"}, header
    assert header["fortran_order"] is False
    shape = list(header["shape"])
    fmt = NPY_FORMATS[header["descr"]]
    body = data[start + hlen:]
    assert len(body) == count(shape) * struct.calcsize(fmt), "byte count"
    values = list(struct.unpack("<%d%s" % (count(shape), fmt), body))
    return {"dtype": header["descr"], "shape": shape, "values": values}


def decode_safetensors(data):
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, "header not padded to 8 bytes"
    header = json.loads(data[8:8 + n])
    buf = data[8 + n:]
    out = {"__metadata__": header.pop("__metadata__", {})}
    end = 0
    for name, info in sorted(header.items(),
                             key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        assert b == end, "hole or overlap before %s" % name
        end = e
        fmt = ST_FORMATS[info["dtype"]]
        n = count(info["shape"])
        assert e - b == n * struct.calcsize(fmt)
        values = list(struct.unpack("<%d%s" % (n, fmt), buf[b:e]))
        if info["dtype"] == "BF16":
            values = [struct.unpack("<f", struct.pack("<I", v << 16))[0]
                      for v in values]
        out[name] = {"dtype": info["dtype"], "shape": info["shape"],
                     "values": values}
    assert end == len(buf), "trailing bytes"
    return out


def finite_json(value):
    """JSON has no inf or nan: those become the strings "inf", "-inf", "nan"."""
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def main():
    path = sys.argv[1]
    only = sys.argv[2] if len(sys.argv) > 2 else None
    if path.endswith(".npz"):
        with zipfile.ZipFile(path) as zf:
            assert zf.testzip() is None, "CRC error"
            out = {}
            if only is not None:
                out["__entries__"] = len(zf.infolist())
            for info in zf.infolist():
                if only is not None and info.filename != only + ".npy":
                    continue
                assert info.compress_type == zipfile.ZIP_STORED
                assert info.filename.endswith(".npy")
                out[info.filename[:-4]] = decode_npy(zf.read(info))
    elif path.endswith(".npy"):
        with open(path, "rb") as f:
            out = {"": decode_npy(f.read())}
    else:
        with open(path, "rb") as f:
            out = decode_safetensors(f.read())
    # One write: json.dump would issue one per token.
    sys.stdout.write(json.dumps(finite_json(out), allow_nan=False))


if __name__ == "__main__":
    main()
