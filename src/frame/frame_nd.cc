#include "frame_nd.h"

#include "msgpack.h"

namespace blosc2fs {

const Metalayer* frame_nd_metalayer(const Frame& frame) {
  if (const Metalayer* m = frame.find_metalayer("b2nd")) return m;
  return frame.find_metalayer("caterva");
}

NdMeta frame_nd_meta(const Frame& frame, const Metalayer& nd) {
  const bool caterva = nd.name == "caterva";
  NdMeta meta = parse_nd_meta(nd.content, caterva);
  if (!caterva || meta.dtype) return meta;
  const Metalayer* type = frame.find_metalayer("type");
  if (!type) return meta;
  // Anything but a map with a string "dtype" is someone else's `type`: ignored.
  try {
    std::optional<Json> value = msgpack_to_json(type->content);
    if (value && value->is_object() && value->contains("dtype") && (*value)["dtype"].is_string())
      meta.dtype = (*value)["dtype"].get<std::string>();
  } catch (const std::exception&) {
  }
  return meta;
}

}  // namespace blosc2fs
