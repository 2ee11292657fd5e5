// A Caterva2 server's root or directory as a collection's source: the listing
// from api/list (one request per refresh round, every level derived from it),
// each dataset's bytes from api/fetch, and server.json at the top with the
// server's own description of each path (api/info). Files cat2-server does
// not serve as they are (README.md, a .b2e) are not shown: asked about one,
// the server replaces it on its disk with a compressed copy.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "caterva2.h"
#include "collection_source.h"

namespace blosc2fs {

// `listing`: the session's first list() (the mount refuses to start without it).
std::shared_ptr<CollectionSource> caterva2_collection(std::shared_ptr<Caterva2Session> session,
                                                      std::vector<std::string> listing, std::function<Json()> counters);

}  // namespace blosc2fs
