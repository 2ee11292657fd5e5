// Prints every entry kind of the mount's trees (src/mount/node.h), one per line:
// test_operations.py derives the rows it must run from this list, so that a kind
// added to the enum cannot be left out of docs/operations.md or of the test.
#include <cstdio>

#include "node.h"

int main() {
  for (blosc2fs::NodeKind kind : blosc2fs::kNodeKinds)
    std::printf("%s\n", blosc2fs::node_kind_name(kind));
  return 0;
}
