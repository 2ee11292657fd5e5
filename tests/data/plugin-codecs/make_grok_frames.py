"""Writes the Grok-coded (codec 37) frames of this folder. blosc2-grok cannot write
under python-blosc2 4.x, so these were made once, in a venv of Debian's python3 with
blosc2==3.12.2, numpy==2.4.6 and blosc2-grok==0.3.3 (pip install --no-deps):
    python make_grok_frames.py
The .expect.npz beside each frame is what python-blosc2 4.14.1 with blosc2-grok
0.3.5 reads back: `array` (blosc2.open(path)[...]) and `chunkN`
(schunk.decompress_chunk(N) as uint8)."""
import blosc2
import blosc2_grok
import numpy as np

rng = np.random.default_rng(5)
base = np.add.outer(np.arange(64), np.arange(48))
grey = (base % 256).astype(np.uint8) ^ rng.integers(0, 8, (64, 48), dtype=np.uint8)
rgb = np.stack([grey, grey[::-1], (grey.astype(np.uint16) * 3 % 256).astype(np.uint8)], axis=-1).astype(np.uint8)
u16 = (base * 37 % 4096).astype(np.uint16)
cases = {
    "grok-u8-grey": (grey, {}),
    "grok-u8-rgb": (rgb, {}),
    "grok-u16": (u16, {}),
    "grok-u8-grey-lossy": (grey, {"quality_mode": "rates", "quality_layers": np.array([5], dtype=np.float64)}),
}
for name, (array, params) in cases.items():
    blosc2_grok.set_params_defaults(**params)
    cparams = {"codec": blosc2.Codec.GROK, "filters": [], "splitmode": blosc2.SplitMode.NEVER_SPLIT}
    chunks = (32,) + array.shape[1:]
    blosc2.asarray(array, urlpath=f"{name}.b2nd", mode="w", chunks=chunks, blocks=chunks, cparams=cparams)
