"""The reference model of one writable mounted frame, for test_model.py: what
every file of the tree must hold after each operation, and which errno the
documentation (docs/writing.md) names for an operation it refuses.

The model knows the frame as the mount shows it: its chunks (decoded), its
vlmetalayers (the bytes vlmeta/NAME shows; a layer written through attrs/ is
kept as its JSON value, whose msgpack bytes the mount chooses), and whether it
is an N-d array (then the chunk count and sizes are fixed). Operations are plain
tuples, so a failing sequence can be printed, replayed and shrunk."""

import errno
import json

import msgpack
import numpy as np

from operations import bytes_after

MAX_VLMETALAYERS = 16
MAX_NAME = 31


class Layer:
    """One vlmetalayer: raw bytes, or a JSON value written through attrs/."""

    def __init__(self, raw=None, value=None, is_value=False):
        self.raw = raw
        self.value = value
        self.is_value = is_value

    def copy(self):
        return Layer(self.raw, self.value, self.is_value)

    def __repr__(self):
        return f"Layer(value={self.value!r})" if self.is_value else f"Layer(raw={len(self.raw)} bytes)"


class NdGeometry:
    """A b2nd array's chunks and blocks, to move bytes between its C-order items
    (array.npy) and its decoded chunks (blocks in C order over the block grid,
    each block's items in C order; edge chunks padded), independently of the
    mount's own NdLayout."""

    def __init__(self, shape, chunkshape, blockshape, itemsize):
        self.shape, self.chunkshape, self.blockshape = tuple(shape), tuple(chunkshape), tuple(blockshape)
        self.itemsize = itemsize
        self.ext = tuple(-(-c // b) * b for c, b in zip(chunkshape, blockshape))
        self.grid = tuple(-(-s // c) for s, c in zip(shape, chunkshape))
        self.dtype = np.dtype(("V", itemsize))

    def _chunk_items(self, chunk):
        nd = len(self.shape)
        nblocks = tuple(e // b for e, b in zip(self.ext, self.blockshape))
        a = np.frombuffer(chunk, self.dtype).reshape(nblocks + self.blockshape)
        order = [k for d in range(nd) for k in (d, nd + d)]
        return a.transpose(order).reshape(self.ext)

    def _chunk_bytes(self, items):
        nd = len(self.shape)
        nblocks = tuple(e // b for e, b in zip(self.ext, self.blockshape))
        a = items.reshape(tuple(x for d in range(nd) for x in (nblocks[d], self.blockshape[d])))
        order = [2 * d for d in range(nd)] + [2 * d + 1 for d in range(nd)]
        return np.ascontiguousarray(a.transpose(order)).tobytes()

    def _regions(self):
        for n, index in enumerate(np.ndindex(*self.grid)):
            start = [i * c for i, c in zip(index, self.chunkshape)]
            stop = [min(s + c, dim) for s, c, dim in zip(start, self.chunkshape, self.shape)]
            yield n, tuple(slice(a, b) for a, b in zip(start, stop)), tuple(slice(0, b - a) for a, b in zip(start, stop))

    def array_bytes(self, chunks):
        out = np.zeros(self.shape, self.dtype)
        for n, region, inside in self._regions():
            out[region] = self._chunk_items(chunks[n])[inside]
        return out.tobytes()

    def put_array_bytes(self, chunks, data):
        """chunks with the C-order `data` written in; the padding keeps its bytes."""
        new = np.frombuffer(data, self.dtype).reshape(self.shape)
        result = list(chunks)
        for n, region, inside in self._regions():
            items = self._chunk_items(chunks[n]).copy()
            items[inside] = new[region]
            result[n] = self._chunk_bytes(items)
        return result


class FrameModel:
    def __init__(self, chunksize, chunks, vlmeta, fixed_geometry, geometry=None):
        self.chunksize = chunksize
        self.chunks = [bytes(c) for c in chunks]
        self.vlmeta = dict(vlmeta)  # name -> Layer
        self.fixed_geometry = fixed_geometry  # an N-d array: chunk count and sizes never change
        self.geometry = geometry  # NdGeometry of an N-d array (array.npy writes)

    def copy(self):
        return FrameModel(self.chunksize, self.chunks, {k: v.copy() for k, v in self.vlmeta.items()},
                          self.fixed_geometry, self.geometry)

    @property
    def data(self):
        return b"".join(self.chunks)

    def rechunk(self, data):
        cs = self.chunksize
        self.chunks = [data[i:i + cs] for i in range(0, len(data), cs)]

    def last_full(self):
        return not self.chunks or len(self.chunks[-1]) == self.chunksize

    # --- what each operation does to the model: the errno it must fail with
    # (None: it succeeds and the model changed). Called before the operation runs.

    def apply(self, op):
        kind = op[0]
        handler = getattr(self, "_" + kind)
        return handler(*op[1:])

    def _layer_name_error(self, name, creating):
        if len(name.encode()) > MAX_NAME:
            return errno.ENAMETOOLONG
        if creating and name not in self.vlmeta and len(self.vlmeta) >= MAX_VLMETALAYERS:
            return errno.ENOSPC
        return None

    def _vlmeta_write(self, name, raw):
        err = self._layer_name_error(name, True)
        if err:
            return err
        self.vlmeta[name] = Layer(raw=raw)
        return None

    def _editor_save(self, name, raw):
        # A scratch file renamed onto the name: the layer is created or replaced.
        return self._vlmeta_write(name, raw)

    def _vlmeta_append(self, name, raw):
        if name not in self.vlmeta:
            return errno.ENOENT
        if self.vlmeta[name].is_value:
            return "skip"  # the mount chose those bytes; the model knows the value only
        self.vlmeta[name] = Layer(raw=self._raw(name) + raw)
        return None

    def _vlmeta_truncate(self, name, length):
        if name not in self.vlmeta:
            return errno.ENOENT
        if self.vlmeta[name].is_value:
            return "skip"
        old = self._raw(name)
        self.vlmeta[name] = Layer(raw=old[:length] + bytes(max(0, length - len(old))))
        return None

    def _vlmeta_rename(self, old, new):
        if old not in self.vlmeta:
            return errno.ENOENT
        err = self._layer_name_error(new, False)
        if err:
            return err
        layer = self.vlmeta.pop(old)
        self.vlmeta[new] = layer
        return None

    def _vlmeta_unlink(self, name):
        if name not in self.vlmeta:
            return errno.ENOENT
        del self.vlmeta[name]
        return None

    def _attrs_write(self, name, text):
        err = self._layer_name_error(name, True)
        if err:
            return err
        try:
            value = json.loads(text)
        except ValueError:
            return errno.EINVAL
        self.vlmeta[name] = Layer(value=value, is_value=True)
        return None

    def _chunk_pwrite(self, n, offset, raw):
        if n >= len(self.chunks):
            return errno.ENOENT
        chunk = self.chunks[n]
        if offset + len(raw) > self.chunksize:
            return errno.EFBIG
        if offset + len(raw) > len(chunk) and (n != len(self.chunks) - 1 or self.fixed_geometry):
            return errno.EFBIG  # an N-d array's chunks keep their size (docs/operations.md)
        if offset > len(chunk):
            return "skip"
        self.chunks[n] = chunk[:offset] + raw + chunk[offset + len(raw):]
        return None

    def _chunk_append(self, n, raw):
        if self.fixed_geometry and n == len(self.chunks):
            return errno.EPERM  # an N-d array has the chunks its shape needs
        if self.fixed_geometry or n < len(self.chunks) or not self.last_full() or len(raw) != self.chunksize:
            return "skip"
        if n > len(self.chunks):
            return errno.EPERM  # only chunks/N for N = the number of chunks is a new chunk
        self.chunks.append(raw)
        return None

    def _chunk_remove(self, n):
        if n >= len(self.chunks):
            return errno.ENOENT
        if self.fixed_geometry:
            return errno.EPERM  # an N-d array has the chunks its shape needs
        if n != len(self.chunks) - 1:
            return errno.EPERM
        self.chunks.pop()
        return None

    def _raw_copy(self, src, dst):
        if src >= len(self.chunks) or dst >= len(self.chunks):
            return "skip"
        if len(self.chunks[src]) != len(self.chunks[dst]):
            return "skip"
        self.chunks[dst] = self.chunks[src]
        return None

    def _data_pwrite(self, offset, raw):
        data = self.data
        if self.fixed_geometry and offset + len(raw) > len(data):
            return errno.EFBIG  # an N-d array's data keeps its size
        if offset > len(data):
            data += bytes(offset - len(data))
        self.rechunk(data[:offset] + raw + data[offset + len(raw):])
        return None

    def _data_mmap_write(self, offset, raw):
        data = self.data
        if offset + len(raw) > len(data):
            return "skip"
        self.rechunk(data[:offset] + raw + data[offset + len(raw):])
        return None

    def _npy_write(self, offset, raw):
        if self.geometry is None:
            return "skip"
        data = self.geometry.array_bytes(self.chunks)
        if offset + len(raw) > len(data):
            return "skip"
        self.chunks = self.geometry.put_array_bytes(self.chunks, data[:offset] + raw + data[offset + len(raw):])
        return None

    def _npy_mmap_write(self, offset, raw):
        return self._npy_write(offset, raw)

    def _data_truncate(self, length):
        if self.fixed_geometry:
            return None if length == len(self.data) else errno.EINVAL
        data = self.data
        self.rechunk(data[:length] + bytes(max(0, length - len(data))))
        return None

    def _other_writer_vlmeta(self, name, value):
        if self._layer_name_error(name, True):
            return "skip"
        self.vlmeta[name] = Layer(value=value, is_value=True)
        return None

    def _other_writer_append(self, raw):
        if self.fixed_geometry or not self.last_full() or len(raw) != self.chunksize:
            return "skip"
        self.chunks.append(raw)
        return None

    # Operations that change nothing the model holds.
    def _remount(self):
        return None

    def _kill_remount(self):
        return None

    def _keep_open(self, slot):
        return None

    def _read_kept(self, slot):
        return None

    def _close_kept(self, slot):
        return None

    def table_change(self, change, kind, name, op, sibling=None, new_name=None):
        """What docs/operations.md's "changes: ..." does to the model (test_model's
        table steps); an errno where the model knows the change fails, "skip" where
        the model cannot follow it."""
        if change == "as written":
            if kind == "vlmeta":
                if self.vlmeta[name].is_value:
                    return "skip"  # the mount chose those bytes; the model knows the value only
                self.vlmeta[name] = Layer(raw=bytes_after(op, self._raw(name)))
            elif kind == "chunk":
                self.chunks[int(name)] = bytes_after(op, self.chunks[int(name)])
            elif kind == "data":
                self.rechunk(bytes_after(op, self.data))
            else:
                return "skip"
        elif change == "removed":
            if kind in ("vlmeta", "attrs"):
                del self.vlmeta[name]
            else:
                self.chunks.pop()
        elif change == "renamed":
            return self._vlmeta_rename(name, "renamed")
        elif change == "replaces the sibling":
            return self._vlmeta_rename(name, sibling)
        elif change == "a new empty layer":
            return self._vlmeta_write(new_name, b"")
        elif change == "the chunk reads as the fill value":
            self.chunks[0] = bytes(len(self.chunks[0]))
        else:
            return "skip"
        return None

    def _raw(self, name):
        layer = self.vlmeta[name]
        return layer.raw if not layer.is_value else None

    # --- what the mount's files must hold

    def layer_matches(self, name, shown):
        """Whether vlmeta/NAME's bytes `shown` are what the model holds."""
        layer = self.vlmeta[name]
        if not layer.is_value:
            return shown == layer.raw
        try:
            return msgpack.unpackb(shown, raw=False, strict_map_key=False) == layer.value
        except Exception:
            return False
