#!/usr/bin/env python3
"""Writes the files the io unit tests read, with Python's own zipfile, so the
readers are checked against an implementation other than our writers.
NumPy is not needed: .npy files are built byte by byte as NumPy lays them out.

Usage: make_fixtures.py OUTDIR  (writes OUTDIR/stamp last)
"""
import json
import os
import struct
import sys
import zipfile


def npy(descr, shape, payload, version=(1, 0), fortran=False, header=None):
    if header is None:
        header = "{'descr': %r, 'fortran_order': %s, 'shape': %r, }" % (
            descr, fortran, tuple(shape))
    length_bytes = 2 if version[0] == 1 else 4
    preamble = 8 + length_bytes
    total = preamble + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    out = b"\x93NUMPY" + bytes(version)
    out += struct.pack("<H" if length_bytes == 2 else "<I", len(header))
    return out + header.encode("utf-8" if version[0] == 3 else "latin1") + payload


F32_2x3 = struct.pack("<6f", *[i * 0.5 - 1 for i in range(6)])
I64_2 = struct.pack("<2q", 7, -3)


def write(outdir, name, data):
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)


def write_npz(path, entries, compression, force_zip64=False):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in entries:
            if force_zip64:
                # What numpy.savez does: it streams each array with
                # force_zip64=True, so even small archives carry zip64 headers.
                with zf.open(name, "w", force_zip64=True) as f:
                    f.write(data)
            else:
                zf.writestr(name, data)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)

    write(outdir, "f32.npy", npy("<f4", (2, 3), F32_2x3))
    write(outdir, "f16.npy",
          npy("<f2", (4,), struct.pack("<4e", 1.0, -2.5, 0.5, 65504.0)))
    write(outdir, "i32.npy",
          npy("<i4", (3,), struct.pack("<3i", 1, -2, 2147483647)))
    write(outdir, "i64.npy",
          npy("<i8", (2, 2), struct.pack("<4q", 0, -1, 2**40, -(2**62))))
    write(outdir, "scalar.npy", npy("<f4", (), struct.pack("<f", 3.5)))
    write(outdir, "empty.npy", npy("<f4", (0, 3), b""))
    write(outdir, "v2.npy",
          npy("<f4", (2,), struct.pack("<2f", 1, 2), version=(2, 0)))
    write(outdir, "v3.npy",
          npy("<f4", (2,), struct.pack("<2f", 1, 2), version=(3, 0)))
    write(outdir, "native.npy",
          npy("=i4", (1,), struct.pack("<i", 5)))
    write(outdir, "py2long.npy",
          npy(None, None, struct.pack("<3i", 1, 2, 3),
              header="{'descr': '<i4', 'fortran_order': False, "
              "'shape': (3L,), }"))
    write(outdir, "fortran.npy",
          npy("<f4", (2, 2), struct.pack("<4f", 1, 2, 3, 4), fortran=True))
    write(outdir, "bigendian.npy", npy(">f4", (2,), struct.pack(">2f", 1, 2)))
    write(outdir, "f8.npy", npy("<f8", (2,), struct.pack("<2d", 1, 2)))
    write(outdir, "u2.npy", npy("<u2", (2,), struct.pack("<2H", 1, 2)))
    write(outdir, "structured.npy",
          npy(None, None, b"\0" * 8,
              header="{'descr': [('a', '<f4'), ('b', '<i4')], "
              "'fortran_order': False, 'shape': (1,), }"))
    write(outdir, "extra_bytes.npy",
          npy("<f4", (2,), struct.pack("<3f", 1, 2, 3)))
    write(outdir, "short_data.npy", npy("<f4", (3,), struct.pack("<2f", 1, 2)))

    entries = [("x.npy", npy("<f4", (2, 3), F32_2x3)),
               ("y.npy", npy("<i8", (2,), I64_2))]
    write_npz(os.path.join(outdir, "stored.npz"), entries, zipfile.ZIP_STORED)
    write_npz(os.path.join(outdir, "deflated.npz"), entries,
              zipfile.ZIP_DEFLATED)
    write_npz(os.path.join(outdir, "zip64.npz"), entries,
              zipfile.ZIP_DEFLATED, force_zip64=True)
    write_npz(os.path.join(outdir, "with_notes.npz"),
              entries + [("notes.txt", b"not an array")], zipfile.ZIP_STORED)
    write_npz(os.path.join(outdir, "bad_inner.npz"),
              [("x.npy", npy("<f4", (2, 3), F32_2x3)[:-5])],
              zipfile.ZIP_DEFLATED)
    write_npz(os.path.join(outdir, "f8_inner.npz"),
              [("x.npy", npy("<f8", (1,), struct.pack("<d", 1)))],
              zipfile.ZIP_STORED)
    with zipfile.ZipFile(os.path.join(outdir, "bzip2.npz"), "w",
                         compression=zipfile.ZIP_BZIP2) as zf:
        zf.writestr("x.npy", entries[0][1])

    # Safetensors, tensors deliberately stored out of name order.
    tensors = [
        ("e", "I64", [1], struct.pack("<q", -(2**40))),
        ("a", "F32", [2, 2], struct.pack("<4f", 1, -2, 0.25, 8)),
        ("b", "BF16", [3], struct.pack("<3H", 0x3F80, 0xC000, 0x3F00)),
        ("c", "F16", [2], struct.pack("<2e", 1.5, -0.5)),
        ("d", "I32", [2], struct.pack("<2i", 42, -7)),
        ("s", "F32", [], struct.pack("<f", 2.5)),
        ("z", "F32", [0, 4], b""),
    ]
    header, data = {"__metadata__": {"format": "pt", "step": "12"}}, b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    write(outdir, "model.safetensors", struct.pack("<Q", len(text)) + text + data)

    write(outdir, "stamp", b"")


if __name__ == "__main__":
    main()
