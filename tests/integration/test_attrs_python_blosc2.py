"""attrs/ against python-blosc2 itself, both ways: vlmeta values of every type
python-blosc2 stores (str, int, float, bool, None, bytes, tuples, nested lists
and dicts) read through attrs/ as the same value, and JSON written through
attrs/ reads in python-blosc2 as the same Python value."""

import base64
import json
import math
import os
import sys

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, read_file  # noqa: E402
from test_kinds import as_json  # noqa: E402

VALUES = {
    "str": "hello",
    "str_long": "ü" * 40,
    "str_empty": "",
    "int": 42,
    "int_negative": -7,
    "int_big": 2**63 - 1,
    "int_most_negative": -(2**63),
    "float": 3.25,
    "float_tiny": 5e-324,
    "float_nan": float("nan"),
    "float_inf": float("-inf"),
    "true": True,
    "false": False,
    "none": None,
    "bytes": b"\x00\x01\xfe\xff",
    "bytes_empty": b"",
    "tuple": (1, "two", 3.0),
    "tuple_nested": ((1, 2), [3, (4,)]),
    "list": [1, "a", None, [2.5, [True]]],
    "dict": {"a": 1, "b": {"c": [1, 2, (3, b"x")], "d": None}},
    "empty_list": [],
    "empty_dict": {},
}


def same(a, b):
    """Equality that takes NaN as equal to itself and keeps tuples apart from lists."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


# A frame holds at most 16 vlmetalayers (c-blosc2's BLOSC2_MAX_VLMETALAYERS).
GROUPS = [dict(list(VALUES.items())[i:i + 12]) for i in range(0, len(VALUES), 12)]


def python_writes(h):
    for group in GROUPS:
        path = os.path.join(h.new_dir("src"), "attrs.b2nd")
        a = blosc2.asarray(np.arange(10), urlpath=path, mode="w")
        for k, v in group.items():
            a.vlmeta[k] = v
        del a
        opened = blosc2.open(path)
        back = opened.vlmeta
        mnt = h.mount(path, ["-o", "ro"])
        for k, v in group.items():
            check(same(back[k], v), f"python-blosc2 reads {k} back as {back[k]!r}")
            text = read_file(os.path.join(mnt, "attrs", k)).decode()
            check_equal(json.loads(text), as_json(back[k]), f"attrs/{k}")
        h.unmount(mnt)


def mount_writes(h):
    for group in GROUPS:
        path = os.path.join(h.new_dir("src"), "target.b2nd")
        blosc2.asarray(np.arange(10), urlpath=path, mode="w")
        mnt = h.mount(path)
        for k, v in group.items():
            with open(os.path.join(mnt, "attrs", k), "w") as f:
                f.write(json.dumps(as_json(v)) + "\n")
        h.unmount(mnt)
        opened = blosc2.open(path)
        back = opened.vlmeta
        for k, v in group.items():
            check(same(back[k], v), f"python-blosc2 reads attrs/{k} written as JSON as {back[k]!r}, not {v!r}")
        check_equal(opened[:].tolist(), list(range(10)), "the array is untouched")


def bytes_spellings(h):
    """{"__bytes__": ...} is the only spelling of bytes; a dict with other keys stays a dict."""
    path = os.path.join(h.new_dir("src"), "b.b2nd")
    blosc2.asarray(np.arange(3), urlpath=path, mode="w")
    mnt = h.mount(path)
    payload = base64.b64encode(b"\x10\x20").decode()
    with open(os.path.join(mnt, "attrs", "b"), "w") as f:
        f.write(json.dumps({"__bytes__": payload}))
    with open(os.path.join(mnt, "attrs", "d"), "w") as f:
        f.write(json.dumps({"__bytes__": payload, "other": 1}))
    h.unmount(mnt)
    opened = blosc2.open(path)
    back = opened.vlmeta
    check_equal(back["b"], b"\x10\x20", "bytes")
    check_equal(back["d"], {"__bytes__": payload, "other": 1}, "a dict that only looks like bytes")


def main():
    h = Harness("attrs/ against python-blosc2", watchdog_seconds=180)
    h.require_fuse()
    h.test("vlmeta python-blosc2 wrote reads through attrs/ as the same value", python_writes, h)
    h.test("JSON written through attrs/ reads in python-blosc2 as the same value", mount_writes, h)
    h.test("bytes spelled in JSON", bytes_spellings, h)
    h.finish()


if __name__ == "__main__":
    main()
