"""Writes the OpenHTJ2K-coded (codec 36) frames of this folder and their expected
readings. blosc2-openhtj2k 0.1.2 cannot write under python-blosc2 4.x (its encoder
does not find the "b2nd" metalayer), but python-blosc2 4.x reads its blocks. So:

1. in a venv of Debian's python3 with blosc2==3.12.2, numpy==2.4.6 and
   blosc2-openhtj2k==0.1.2 (pip install --no-deps), with the venv's bin first on PATH
   (c-blosc2 finds the plugin by running `python`):
       python make_openhtj2k_frames.py write
2. in the test venv (python-blosc2 4.14.1, blosc2-openhtj2k 0.1.2):
       python make_openhtj2k_frames.py expect
   which saves NAME.expect.npz: `array` (blosc2.open(path)[...]) and `chunkN`
   (schunk.decompress_chunk(N) as uint8).

The plugin takes a 3-d uint32 array (components, width, height), one 8-bit sample per
uint32, and hands back planar int32 samples."""
import glob
import os
import sys

import blosc2
import numpy as np
import blosc2_openhtj2k

HERE = os.path.dirname(os.path.abspath(__file__))


def image(components, width, height, seed):
    rng = np.random.default_rng(seed)
    base = np.add.outer(np.arange(width) * 3, np.arange(height) * 5) % 256
    planes = [(np.roll(base, 11 * c, axis=0) ^ rng.integers(0, 4, (width, height))) % 256 for c in range(components)]
    return np.stack(planes).astype(np.uint32)


CASES = {
    # name: (array, chunks, blocks, plugin parameters)
    "openhtj2k-rgb": (image(3, 64, 48, 1), (3, 32, 48), (3, 32, 48), {}),
    "openhtj2k-grey-2blocks": (image(1, 64, 40, 2), (1, 64, 40), (1, 32, 40), {}),
    # transformation 0: the irreversible 9/7 wavelet (lossy)
    "openhtj2k-rgb-lossy": (image(3, 64, 48, 3), (3, 32, 48), (3, 32, 48), {"transformation": 0}),
}


def write():
    for name, (array, chunks, blocks, params) in CASES.items():
        blosc2_openhtj2k.set_params_defaults(**params)
        cparams = {"codec": blosc2.Codec.OPENHTJ2K, "filters": [], "splitmode": blosc2.SplitMode.NEVER_SPLIT}
        blosc2.asarray(array, urlpath=os.path.join(HERE, name + ".b2nd"), mode="w", chunks=chunks, blocks=blocks,
                       cparams=cparams)


def expect():
    for path in sorted(glob.glob(os.path.join(HERE, "openhtj2k-*.b2nd"))):
        array = blosc2.open(path, mode="r")
        saved = {"array": array[...]}
        for i in range(array.schunk.nchunks):
            saved[f"chunk{i}"] = np.frombuffer(array.schunk.decompress_chunk(i), dtype=np.uint8)
        np.savez_compressed(path[:-len(".b2nd")] + ".expect.npz", **saved)


if __name__ == "__main__":
    {"write": write, "expect": expect}[sys.argv[1]]()
