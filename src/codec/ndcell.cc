// NDCELL and NDMEAN (plugin-codecs.md §4, §5), written from the format facts.
//
// Both store a block cell by cell: the cells in row-major order over the grid of
// cells, inside a cell the runs along the last dimension, clipped at the block's
// edge. Decoding scatters those runs back. NDMEAN's decoder (in c-blosc2) places
// the cell origins with one multiplier, the first dimension's cell size, for every
// dimension; where cell sizes differ that misplaces them and its final check
// fails. We place and check the same way, so we decode exactly what c-blosc2
// decodes and refuse what it refuses.
#include "ndcell.h"
#include "error.h"

#include <cstring>
#include <string>
#include <vector>

namespace blosc2fs {

namespace {

constexpr int kMaxNdcellDims = 8;

[[noreturn]] void fail(const char* filter, const std::string& why) {
  throw FormatError(std::string(filter) + ": " + why);
}

// The block shape and cell sizes, validated: every product fits in int64 and the
// block is exactly `size` bytes.
struct CellGrid {
  int ndim = 0;
  int64_t shape[kMaxNdcellDims] = {};
  int64_t cell[kMaxNdcellDims] = {};
  int64_t grid[kMaxNdcellDims] = {};
  int64_t nitems = 1;
  int64_t ncells = 1;
  int64_t typesize = 0;
  int64_t origin_multiplier = 0;
};

CellGrid make_grid(const char* filter, size_t size, const BlockGeometry& g, int64_t typesize) {
  CellGrid c;
  if (g.ndim < 1 || g.ndim > kMaxNdcellDims)
    fail(filter, g.ndim == 0 ? std::string("the frame has no b2nd block shape")
                             : "block of " + str(g.ndim) + " dimensions (1 to 8 allowed)");
  if (typesize < 1) fail(filter, "typesize " + str(typesize));
  c.ndim = g.ndim;
  c.typesize = typesize;
  for (int d = 0; d < c.ndim; ++d) {
    c.shape[d] = g.blockshape[size_t(d)];
    if (c.shape[d] < 1) fail(filter, "block dimension " + str(d) + " is " + str(c.shape[d]));
    if (c.nitems > int64_t(size) / c.shape[d]) fail(filter, "block shape holds more items than the block's bytes");
    c.nitems *= c.shape[d];
  }
  if (c.nitems * typesize != int64_t(size))
    fail(filter, "block of " + str(int64_t(size)) + " bytes is not the block shape's " + str(c.nitems) + " items of " +
                     str(typesize) + " bytes");
  return c;
}

void finish_grid(CellGrid& c) {
  for (int d = 0; d < c.ndim; ++d) {
    c.grid[d] = (c.shape[d] + c.cell[d] - 1) / c.cell[d];
    c.ncells *= c.grid[d];  // <= nitems: every cell holds at least one item
  }
}

// Calls copy(item_index, item_position_in_cell_order, run_items) for every run of
// the last dimension, in cell order, and cell_done() after each cell's runs. Fails,
// before any copy leaves the block, on a run that would, and at the end unless the
// last run ends the block: c-blosc2's final check.
struct NoCellEnd {
  void operator()() const {}
};

template <class Copy, class CellDone = NoCellEnd>
void walk_cells(const char* filter, const CellGrid& c, Copy&& copy, CellDone&& cell_done = {}) {
  const int last = c.ndim - 1;
  int64_t position = 0;  // items already read or written in cell order
  int64_t last_end = -1;
  int64_t ci[kMaxNdcellDims] = {};  // the cell's coordinates
  for (int64_t cell = 0; cell < c.ncells; ++cell) {
    if (cell > 0) {
      for (int d = last; d >= 0; --d) {
        if (++ci[d] < c.grid[d]) break;
        ci[d] = 0;
      }
    }
    int64_t origin = 0, stride = c.origin_multiplier;
    int64_t extent[kMaxNdcellDims];
    for (int d = last; d >= 0; --d) {
      origin += ci[d] * stride;
      stride *= c.shape[d];
      const int64_t rest = c.shape[d] % c.cell[d];
      extent[d] = rest != 0 && ci[d] == c.grid[d] - 1 ? rest : c.cell[d];
    }
    int64_t runs = 1;
    for (int d = 0; d < last; ++d) runs *= extent[d];
    int64_t ri[kMaxNdcellDims] = {};  // the run's coordinates inside the cell
    for (int64_t run = 0; run < runs; ++run) {
      if (run > 0) {
        for (int d = last - 1; d >= 0; --d) {
          if (++ri[d] < extent[d]) break;
          ri[d] = 0;
        }
      }
      int64_t index = origin, row_stride = c.shape[last];
      for (int d = last - 1; d >= 0; --d) {
        index += ri[d] * row_stride;
        row_stride *= c.shape[d];
      }
      const int64_t n = extent[last];
      if (index < 0 || index > c.nitems - n || position > c.nitems - n)
        fail(filter, "cell " + str(cell) + " reaches past the block (the cell sizes do not fit its shape)");
      copy(index, position, n);
      position += n;
      last_end = index + n;
    }
    cell_done();
  }
  if (last_end != c.nitems)
    fail(filter, "the cells end at item " + str(last_end) + ", not at the block's " + str(c.nitems) +
                     " (c-blosc2 refuses this block too)");
}

void check_buffers(const char* filter, ByteSpan in, MutableByteSpan out) {
  if (in.size() != out.size())
    fail(filter, "input of " + str(int64_t(in.size())) + " bytes for an output of " + str(int64_t(out.size())));
}

CellGrid ndcell_grid(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g) {
  check_buffers("ndcell", in, out);
  CellGrid c = make_grid("ndcell", out.size(), g, g.typesize);
  if (meta == 0) fail("ndcell", "cell size 0");
  int64_t cell_items = 1;
  for (int d = 0; d < c.ndim; ++d) {
    c.cell[d] = meta;
    if (cell_items <= c.nitems) cell_items *= meta;  // stops growing past nitems: no overflow
  }
  if (cell_items > c.nitems)
    fail("ndcell", "a cell of " + str(cell_items) + " items is larger than the block's " + str(c.nitems));
  c.origin_multiplier = meta;
  finish_grid(c);
  return c;
}

CellGrid ndmean_grid(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g, int64_t typesize) {
  check_buffers("ndmean", in, out);
  const int cell = int8_t(meta);
  if (cell <= 0) fail("ndmean", "cell size " + str(cell) + " (filters_meta read as int8 must be > 0)");
  CellGrid c = make_grid("ndmean", out.size(), g, typesize);
  for (int d = 0; d < c.ndim; ++d) c.cell[d] = c.shape[d] < cell ? c.shape[d] : cell;
  c.origin_multiplier = c.cell[0];
  finish_grid(c);
  return c;
}

template <class Float>
void write_means(const CellGrid& c, ByteSpan in, MutableByteSpan out) {
  Float sum = 0;
  int64_t cell_start = 0, count = 0;
  walk_cells(
      "ndmean", c,
      [&](int64_t index, int64_t, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
          Float v;
          std::memcpy(&v, in.data() + size_t(index + k) * sizeof(Float), sizeof(Float));
          sum += v;
        }
        count += n;
      },
      [&] {
        const Float mean = sum / Float(count);
        for (int64_t k = 0; k < count; ++k)
          std::memcpy(out.data() + size_t(cell_start + k) * sizeof(Float), &mean, sizeof(Float));
        cell_start += count;
        sum = 0;
        count = 0;
      });
}

}  // namespace

void ndcell_decode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g) {
  const CellGrid c = ndcell_grid(in, out, meta, g);
  const size_t ts = size_t(c.typesize);
  walk_cells("ndcell", c, [&](int64_t index, int64_t position, int64_t n) {
    std::memcpy(out.data() + size_t(index) * ts, in.data() + size_t(position) * ts, size_t(n) * ts);
  });
}

void ndcell_encode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g) {
  const CellGrid c = ndcell_grid(in, out, meta, g);
  const size_t ts = size_t(c.typesize);
  walk_cells("ndcell", c, [&](int64_t index, int64_t position, int64_t n) {
    std::memcpy(out.data() + size_t(position) * ts, in.data() + size_t(index) * ts, size_t(n) * ts);
  });
}

void ndmean_decode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g) {
  // c-blosc2 reads the typesize as int8 and needs it > 0 only.
  const CellGrid c = ndmean_grid(in, out, meta, g, int8_t(g.typesize));
  const size_t ts = size_t(c.typesize);
  walk_cells("ndmean", c, [&](int64_t index, int64_t position, int64_t n) {
    std::memcpy(out.data() + size_t(index) * ts, in.data() + size_t(position) * ts, size_t(n) * ts);
  });
}

void ndmean_encode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g) {
  if (g.typesize != 4 && g.typesize != 8) fail("ndmean", "typesize " + str(g.typesize) + " (4 or 8 only)");
  const CellGrid c = ndmean_grid(in, out, meta, g, g.typesize);
  if (g.typesize == 4)
    write_means<float>(c, in, out);
  else
    write_means<double>(c, in, out);
}

}  // namespace blosc2fs
