// Block geometries for codec tests: a typesize and a b2nd block shape.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "block_geometry.h"

namespace blosc2fs::testing {

inline BlockGeometry geometry(int32_t typesize, std::initializer_list<int32_t> blockshape) {
  BlockGeometry g;
  g.typesize = typesize;
  g.ndim = int32_t(blockshape.size());
  size_t i = 0;
  for (int32_t b : blockshape) g.blockshape[i++] = b;
  return g;
}

}  // namespace blosc2fs::testing
