#include "store.h"

#include <algorithm>
#include <cerrno>
#include <map>

#include <zlib.h>

#include "error.h"
#include "frame_json.h"
#include "kind.h"
#include "store_key.h"
#include "embed_map.h"
#include "zip_directory.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEmbedName = "embed.b2e";
constexpr const char* kLeafSuffixes[] = {".b2nd", ".b2f", ".b2b"};
// A directory walk stops here: a .b2d of more entries is refused, not listed forever.
constexpr size_t kMaxDirectoryEntries = 1'000'000;
// An embedded frame is decompressed into memory when opened; python-blosc2 embeds
// only values under its threshold, and a few bytes of special chunks can claim
// terabytes of zeros, so larger ones are refused.
constexpr int64_t kMaxEmbeddedFrame = int64_t(256) << 20;

bool has_leaf_suffix(std::string_view name) {
  for (const char* suffix : kLeafSuffixes)
    if (name.ends_with(suffix) && name.size() > std::string_view(suffix).size()) return true;
  return false;
}

// The EmbedStore tag: b2tree/b2dict since python-blosc2 4.1, b2embed before (and for a .b2e).
std::string embed_tag(const Frame& frame) {
  for (const char* tag : {"b2tree", "b2dict", "b2embed"})
    if (frame.find_metalayer(tag)) return tag;
  return {};
}

// The leaf files of a local .b2d, relative to it, sorted. Symbolic links are
// not followed: a link could lead out of the store.
std::vector<std::string> local_leaf_files(const fs::path& path, std::vector<std::string>& skipped) {
  std::vector<std::string> files;
  size_t seen = 0;
  const std::string prefix = path.generic_string() + (path.generic_string().ends_with('/') ? "" : "/");
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (++seen > kMaxDirectoryEntries)
      throw FormatError(path.string() + ": more than " + std::to_string(kMaxDirectoryEntries) + " entries");
    // The iterator's paths start with `path`: cut it off (fs::relative would stat every component).
    const std::string full = it->path().generic_string();
    std::string relative = full.substr(std::min(full.size(), prefix.size()));
    if (it->is_symlink(ec)) {
      if (has_leaf_suffix(relative)) skipped.push_back("'" + relative + "': a symbolic link");
      continue;
    }
    if (!it->is_regular_file(ec) || relative == kEmbedName || !has_leaf_suffix(relative)) continue;
    if (auto why = bad_relative_path(relative)) {
      skipped.push_back("'" + relative.substr(0, 80) + "': " + *why);
      continue;
    }
    files.push_back(relative);
  }
  if (ec) throw IoError("cannot list " + path.string() + ": " + ec.message(), ec.value());
  std::sort(files.begin(), files.end());
  return files;
}

// The leaf objects of a .b2d that lives where objects are listed (an S3 prefix).
std::vector<std::string> listed_leaf_files(const SourceDirectory& directory, std::vector<std::string>& skipped) {
  std::vector<std::string> files;
  for (std::string& relative : directory.list()) {
    if (relative == kEmbedName || !has_leaf_suffix(relative)) continue;
    if (files.size() >= kMaxDirectoryEntries)
      throw FormatError(directory.name() + ": more than " + std::to_string(kMaxDirectoryEntries) + " leaves");
    if (auto why = bad_relative_path(relative)) {
      skipped.push_back("'" + relative.substr(0, 80) + "': " + *why);
      continue;
    }
    files.push_back(std::move(relative));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A deflated zip member inflated into memory, exactly `size` bytes (what the
// central directory says, capped like an embedded frame).
std::shared_ptr<const ByteSource> inflated_member(const ByteSource& zip, const LeafLocation& where,
                                                  const std::string& name) {
  if (where.inflated_length > kMaxEmbeddedFrame)
    throw FormatError(name + ": a deflated frame of " + std::to_string(where.inflated_length) +
                      " bytes, over the 256 MiB inflated into memory");
  Bytes packed = zip.read_bytes(where.offset, size_t(where.length), "deflated zip member");
  Bytes out(size_t(where.inflated_length));
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw FormatError(name + ": zlib cannot start inflating");
  z.next_in = packed.data();
  z.avail_in = uInt(packed.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != out.size())
    throw FormatError(name + ": the deflated member does not inflate to the " + std::to_string(out.size()) +
                      " bytes its zip entry says (zlib: " + std::to_string(rc) + ", " + std::to_string(produced) +
                      " bytes)");
  return memory_source(std::move(out), name);
}

Json location_json(const LeafLocation& where) {
  Json j = Json::object();
  switch (where.type) {
    case LeafLocation::Type::file:
      j["type"] = "file";
      j["path"] = where.relative_path;
      break;
    case LeafLocation::Type::zip_member:
      j["type"] = "zip_member";
      j["member"] = where.relative_path;
      j["offset"] = where.offset;
      j["length"] = where.length;
      break;
    case LeafLocation::Type::embedded:
      j["type"] = "embedded";
      j["offset"] = where.offset;
      j["length"] = where.length;
      break;
    case LeafLocation::Type::remote:
      j["type"] = "remote";
      j["urlbase"] = where.urlbase;
      j["path"] = where.remote_path;
      break;
  }
  return j;
}

}  // namespace

const char* store_format_name(StoreFormat format) {
  switch (format) {
    case StoreFormat::b2d: return "b2d";
    case StoreFormat::b2z: return "b2z";
    case StoreFormat::b2e: return "b2e";
  }
  return "?";
}

namespace {

bool names_object(const SourceDirectory& directory, const std::string& name) {
  try {
    directory.open(name);
    return true;
  } catch (const IoError& e) {
    if (e.error_number() == ENOENT || e.error_number() == ENOTDIR || e.error_number() == EISDIR) return false;
    throw;
  }
}

}  // namespace

std::optional<StoreFormat> detect_store(const StoreSource& source) {
  if (source.directory) {
    if (names_object(*source.directory, kEmbedName) && !names_object(*source.directory, "chunks.b2frame"))
      return StoreFormat::b2d;
    return std::nullopt;
  }
  if (!source.file) return std::nullopt;
  if (looks_like_zip(*source.file)) return StoreFormat::b2z;
  try {
    auto frame = Frame::open(source.file);
    if (!embed_tag(*frame).empty()) return StoreFormat::b2e;
  } catch (const FormatError&) {
  }
  return std::nullopt;
}

std::optional<StoreFormat> detect_store(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path / kEmbedName, ec) && !fs::exists(path / "chunks.b2frame", ec)) return StoreFormat::b2d;
    return std::nullopt;
  }
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  try {
    return detect_store(StoreSource{open_local_file(path), nullptr});
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

Store::~Store() = default;

std::unique_ptr<Store> Store::open(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto store = open(StoreSource{nullptr, open_local_directory(path)});
    store->path_ = path;
    return store;
  }
  auto store = open(StoreSource{open_local_file(path), nullptr});
  store->path_ = path;
  return store;
}

std::unique_ptr<Store> Store::open(const StoreSource& source) {
  const fs::path path = source.directory ? source.directory->name() : source.file ? source.file->name() : "";
  std::optional<StoreFormat> format = detect_store(source);
  if (!format)
    throw FormatError(path.string() +
                      ": not a python-blosc2 store (no .b2d directory with embed.b2e, no .b2z zip archive, "
                      "no .b2e EmbedStore frame)");
  std::unique_ptr<Store> store(new Store);
  store->format_ = *format;
  store->path_ = path;
  store->source_ = source;
  std::map<std::string, StoreLeaf> external;  // key -> leaf, the first by path wins
  auto add_external = [&](std::string relative, LeafLocation where) {
    std::string key = key_from_relative_path(relative);
    if (auto why = bad_key(key)) {
      store->skipped_.push_back("'" + relative.substr(0, 80) + "': " + *why);
      return;
    }
    auto [it, inserted] = external.try_emplace(key, StoreLeaf{key, where});
    if (!inserted) {
      if (where.relative_path < it->second.where.relative_path) std::swap(it->second.where, where);
      store->skipped_.push_back("'" + where.relative_path.substr(0, 80) + "': key " + key.substr(0, 80) +
                                " is already stored as '" + it->second.where.relative_path.substr(0, 80) + "'");
    }
  };

  switch (*format) {
    case StoreFormat::b2e:
      store->embed_ = Frame::open(source.file);
      store->embed_where_.type = LeafLocation::Type::file;
      store->embed_where_.relative_path = ".";
      break;
    case StoreFormat::b2d: {
      store->embed_ = Frame::open(source.directory->open(kEmbedName));
      store->embed_where_.type = LeafLocation::Type::file;
      store->embed_where_.relative_path = kEmbedName;
      std::vector<std::string> files =
          source.directory->remote() ? listed_leaf_files(*source.directory, store->skipped_)
                                     : local_leaf_files(path, store->skipped_);
      std::sort(files.begin(), files.end());
      for (std::string& relative : files) {
        LeafLocation where;
        where.type = LeafLocation::Type::file;
        where.relative_path = relative;
        add_external(relative, where);
      }
      break;
    }
    case StoreFormat::b2z: {
      ZipDirectory dir = read_zip_directory(*source.file);
      store->skipped_ = dir.skipped;
      const ZipMember* embed = nullptr;
      for (const ZipMember& m : dir.members)
        if (m.name == kEmbedName) embed = &m;
      if (!embed) throw FormatError(path.string() + ": a zip archive without embed.b2e: not a .b2z store");
      store->embed_where_ = {LeafLocation::Type::zip_member, embed->name, embed->data_offset, embed->stored_size, {}, {}};
      if (embed->deflated()) {
        store->embed_where_.deflated = true;
        store->embed_where_.inflated_length = embed->size;
        store->embed_ = Frame::open(inflated_member(*source.file, store->embed_where_, path.string() + ": embed.b2e"));
      } else if (embed->stored()) {
        store->embed_ = Frame::open(source.file, embed->data_offset);
        if (store->embed_->header().frame_len > embed->stored_size)
          throw FormatError(path.string() + ": embed.b2e's frame runs past its zip member");
      } else {
        throw FormatError(path.string() + ": embed.b2e is compressed in the zip with method " +
                          std::to_string(embed->method) + " (only stored and deflated members are read)");
      }
      for (const ZipMember& m : dir.members) {
        if (&m == embed || !has_leaf_suffix(m.name)) continue;
        if (!m.stored() && !m.deflated()) {
          store->skipped_.push_back("zip member '" + m.name.substr(0, 80) + "': compressed with method " +
                                    std::to_string(m.method) + " (only stored and deflated members are read)");
          continue;
        }
        LeafLocation where{LeafLocation::Type::zip_member, m.name, m.data_offset, m.stored_size, {}, {}};
        where.deflated = m.deflated();
        where.inflated_length = m.size;
        add_external(m.name, where);
      }
      break;
    }
  }
  store->tag_ = embed_tag(*store->embed_);
  if (store->tag_.empty())
    throw FormatError(path.string() + ": its embed store has none of the b2tree, b2dict, b2embed metalayers");

  EmbedMap map;
  if (const Vlmetalayer* layer = store->embed_->find_vlmetalayer(kEmbedMapLayer))
    map = parse_embed_map(store->embed_->vlmetalayer_content(*layer), store->embed_->header().nbytes);
  for (std::string& line : map.skipped) store->skipped_.push_back(std::move(line));
  std::map<std::string, StoreLeaf> all = std::move(external);
  for (const EmbedEntry& e : map.entries) {
    if (all.count(e.key)) continue;  // python-blosc2 reads the external leaf first
    LeafLocation where;
    if (e.remote) {
      where.type = LeafLocation::Type::remote;
      where.urlbase = e.urlbase;
      where.remote_path = e.path;
    } else {
      where.type = LeafLocation::Type::embedded;
      where.offset = e.offset;
      where.length = e.length;
    }
    all.emplace(e.key, StoreLeaf{e.key, where});
  }
  for (auto& [key, leaf] : all) store->leaves_.push_back(std::move(leaf));
  return store;
}

const StoreLeaf* Store::find(std::string_view key) const {
  auto it = std::lower_bound(leaves_.begin(), leaves_.end(), key,
                             [](const StoreLeaf& leaf, std::string_view k) { return leaf.key < k; });
  return it != leaves_.end() && it->key == key ? &*it : nullptr;
}

fs::path Store::embed_file() const { return format_ == StoreFormat::b2d ? path_ / kEmbedName : path_; }

fs::path Store::leaf_file(const StoreLeaf& leaf) const {
  if (format_ != StoreFormat::b2d || leaf.where.type != LeafLocation::Type::file || remote()) return {};
  return path_ / leaf.where.relative_path;
}

Bytes Store::embedded_bytes(int64_t offset, int64_t length) const {
  const Frame& embed = *embed_;
  const int64_t n = embed.nchunks();
  // The first chunk holding `offset`: the last one starting at or before it.
  int64_t lo = 0, hi = n;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (embed.chunk_data_offset(mid) <= offset) lo = mid;
    else hi = mid;
  }
  Bytes out;
  out.reserve(size_t(length));
  for (int64_t c = lo; c < n && int64_t(out.size()) < length; ++c) {
    // python-blosc2's embed stores have 8 KiB chunks; a claim of gigabytes is not decoded.
    if (embed.chunk_nbytes(c) > kMaxEmbeddedFrame)
      throw FormatError(path_.string() + ": embed store chunk " + std::to_string(c) + " claims " +
                        std::to_string(embed.chunk_nbytes(c)) + " bytes");
    int64_t start = embed.chunk_data_offset(c);
    Bytes chunk = embed.read_chunk(c);
    int64_t from = offset + int64_t(out.size()) - start;
    if (from < 0 || from > int64_t(chunk.size())) break;
    int64_t take = std::min<int64_t>(int64_t(chunk.size()) - from, length - int64_t(out.size()));
    out.insert(out.end(), chunk.begin() + from, chunk.begin() + from + take);
  }
  if (int64_t(out.size()) != length)
    throw FormatError(path_.string() + ": embedded frame at stream offset " + std::to_string(offset) +
                      " runs past the embed store's chunks");
  return out;
}

std::shared_ptr<const Frame> Store::open_leaf(const StoreLeaf& leaf) const {
  const LeafLocation& w = leaf.where;
  switch (w.type) {
    case LeafLocation::Type::file:
      if (!source_.directory->remote()) return Frame::open(path_ / w.relative_path);
      return Frame::open(source_.directory->open(w.relative_path));
    case LeafLocation::Type::zip_member: {
      if (w.deflated) {
        const std::string name = path_.string() + ": member " + w.relative_path;
        return Frame::open(inflated_member(*source_.file, w, name));
      }
      std::shared_ptr<const Frame> frame = Frame::open(source_.file, w.offset);
      if (frame->header().frame_len > w.length)
        throw FormatError(path_.string() + ": member " + w.relative_path + ": its frame (" +
                          std::to_string(frame->header().frame_len) + " bytes) runs past the member (" +
                          std::to_string(w.length) + " bytes)");
      return frame;
    }
    case LeafLocation::Type::embedded: {
      if (w.length > kMaxEmbeddedFrame)
        throw FormatError(path_.string() + ": embedded key " + leaf.key + ": a frame of " + std::to_string(w.length) +
                          " bytes, over the 256 MiB read into memory");
      const std::string name = path_.string() + ": embedded key " + leaf.key;
      std::shared_ptr<const Frame> frame = Frame::open(memory_source(embedded_bytes(w.offset, w.length), name));
      if (frame->header().frame_len != w.length)
        throw FormatError(name + ": the frame is " + std::to_string(frame->header().frame_len) +
                          " bytes, its entry says " + std::to_string(w.length));
      return frame;
    }
    case LeafLocation::Type::remote:
      throw UnsupportedError("key " + leaf.key + " is a remote C2Array reference (" + w.urlbase + ", " +
                             w.remote_path + "): no bytes are stored");
  }
  throw FormatError("unknown leaf location");
}

Json leaf_summary_json(const Frame& frame) {
  Json j = Json::object();
  Json full = frame_to_json(frame);  // its "kind" is the frame's, as frame.json names it
  j["kind"] = full["kind"];
  if (full.contains("array")) {
    const Json& array = full["array"];
    if (array.contains("shape")) j["shape"] = array["shape"];
    if (array.contains("dtype")) j["dtype"] = array["dtype"];
  }
  const FrameHeader& h = frame.header();
  j["nbytes"] = h.nbytes;
  j["cbytes"] = h.cbytes;
  j["ratio"] = full["ratio"];
  Json attrs = Json::object();
  for (const Vlmetalayer& layer : frame.vlmetalayers()) {
    std::optional<Json> value;
    try {
      value = msgpack_to_json(frame.vlmetalayer_content(layer));
    } catch (const FormatError&) {
    }
    attrs[layer.name] = value ? *value : Json(nullptr);
  }
  j["attrs"] = std::move(attrs);
  return j;
}

Json Store::leaf_json(const StoreLeaf& leaf, Json& tables) const {
  Json k = Json::object();
  k["key"] = leaf.key;
  if (leaf.where.type == LeafLocation::Type::remote) {
    k["kind"] = "c2array";
  } else {
    try {
      std::shared_ptr<const Frame> frame = open_leaf(leaf);
      Json summary = leaf_summary_json(*frame);
      for (auto it = summary.begin(); it != summary.end(); ++it) k[it.key()] = *it;
      // A CTable: its /_meta leaf says kind "ctable" and holds the schema as JSON text.
      if (leaf.key.ends_with("/_meta") && k["attrs"].value("kind", "") == "ctable") {
        Json table = Json::object();
        std::string prefix = leaf.key.substr(0, leaf.key.size() - 6);
        table["path"] = prefix.empty() ? "/" : prefix;
        const Json& attrs = k["attrs"];
        if (attrs.contains("schema") && attrs["schema"].is_string()) {
          Json schema = Json::parse(attrs["schema"].get<std::string>(), nullptr, false);
          table["schema"] = schema.is_discarded() ? attrs["schema"] : schema;
        }
        tables.push_back(std::move(table));
      }
    } catch (const std::exception& e) {
      k["error"] = e.what();
    }
  }
  k["storage"] = location_json(leaf.where);
  return k;
}

std::map<std::string, std::string> Store::object_roots() const {
  std::map<std::string, std::string> roots;  // full key -> kind
  if (const Vlmetalayer* layer = embed_->find_vlmetalayer(kObjectRegistryLayer)) {
    std::optional<Json> registry;
    try {
      registry = msgpack_to_json(embed_->vlmetalayer_content(*layer));
    } catch (const FormatError&) {
    }
    if (registry && registry->is_object())
      for (auto it = registry->begin(); it != registry->end(); ++it)
        if (!bad_key(it.key()))
          roots[it.key()] = it->is_object() && (*it)["kind"].is_string() ? (*it)["kind"].get<std::string>() : "object";
  }
  if (!roots.empty()) return roots;
  // Stores written before the registry: a CTable's root is found by its /_meta leaf (not the store's own root).
  for (const StoreLeaf& leaf : leaves_) {
    if (!leaf.key.ends_with("/_meta") || leaf.key.size() <= 6 || leaf.where.type == LeafLocation::Type::remote)
      continue;
    try {
      std::shared_ptr<const Frame> meta = open_leaf(leaf);
      const Vlmetalayer* kind = meta->find_vlmetalayer("kind");
      std::optional<Json> value = kind ? msgpack_to_json(meta->vlmetalayer_content(*kind)) : std::nullopt;
      if (value && *value == "ctable") roots[leaf.key.substr(0, leaf.key.size() - 6)] = "ctable";
    } catch (const std::exception&) {
    }
  }
  return roots;
}

bool is_attrs_carrier_key(std::string_view key) { return key.ends_with(std::string("/") + kAttrsCarrierName); }

std::string attrs_carrier_group(std::string_view key) {
  return std::string(key.substr(0, key.size() - std::string_view(kAttrsCarrierName).size() - 1));
}

Json Store::to_json() const {
  Json j = Json::object();
  j["store"] = path_.string();
  j["format"] = store_format_name(format_);
  j["tag"] = tag_;
  // What the embed store's own frame is, as its frame.json would name it (kind.h).
  j["kind"] = embed_ ? Json(detect_frame_kind(*embed_).name) : Json(nullptr);
  j["embed"] = location_json(embed_where_);
  Json keys = Json::array();
  Json tables = Json::array();
  if (!tree()) {
    // DictStore and EmbedStore: every stored key.
    for (const StoreLeaf& leaf : leaves_) keys.push_back(leaf_json(leaf, tables));
  } else {
    // TreeStore: its keys() -- the data leaves, the groups (every proper prefix, and
    // a group holding only attributes), the object roots (CTables) as one key each,
    // their parts listed under them; the __vlmeta__ carriers become their group's attrs.
    const std::map<std::string, std::string> roots = object_roots();
    auto root_of = [&](const std::string& key) -> const std::string* {
      for (const auto& [root, kind] : roots)
        if (key.size() > root.size() && key.starts_with(root) && key[root.size()] == '/') return &root;
      return nullptr;
    };
    std::map<std::string, Json> entries;           // key -> entry
    std::map<std::string, const StoreLeaf*> carriers;  // group ("" the root) -> its attribute carrier
    std::map<std::string, Json> parts;             // object root -> its leaves
    for (const StoreLeaf& leaf : leaves_) {
      const std::string* root = root_of(leaf.key);
      if (is_attrs_carrier_key(leaf.key) && !(root && *root != attrs_carrier_group(leaf.key))) {
        carriers[attrs_carrier_group(leaf.key)] = &leaf;
        continue;
      }
      if (root) {
        parts[*root].push_back(leaf_json(leaf, tables));
        continue;
      }
      entries[leaf.key] = leaf_json(leaf, tables);
    }
    for (const auto& [root, kind] : roots) {
      Json e = Json::object();
      e["key"] = root;
      e["kind"] = kind;
      e["parts"] = parts.count(root) ? parts[root] : Json::array();
      entries[root] = std::move(e);
    }
    for (const auto& [group, carrier] : carriers)
      if (!group.empty() && !entries.count(group)) entries[group] = Json::object();
    // Every proper prefix of a key is a group.
    std::vector<std::string> all;
    for (const auto& [key, e] : entries) all.push_back(key);
    for (const std::string& key : all)
      for (size_t slash = key.find('/', 1); slash != std::string::npos; slash = key.find('/', slash + 1))
        if (!entries.count(key.substr(0, slash))) entries[key.substr(0, slash)] = Json::object();
    auto attrs_of = [&](const StoreLeaf& carrier, Json& into) {
      Json c = leaf_json(carrier, tables);
      into["attrs"] = c.contains("attrs") ? c["attrs"] : Json::object();
      if (c.contains("error")) into["attrs_error"] = c["error"];
      into["attrs_storage"] = c["storage"];
    };
    for (auto& [key, e] : entries) {
      if (e.empty()) {
        e["key"] = key;
        e["kind"] = "group";
        e["attrs"] = Json::object();
      }
      // A group's or object root's attributes (a data leaf keeps its own).
      if (auto it = carriers.find(key); it != carriers.end() && !e.contains("storage")) attrs_of(*it->second, e);
      keys.push_back(std::move(e));
    }
    j["attrs"] = Json::object();
    if (auto it = carriers.find(""); it != carriers.end()) attrs_of(*it->second, j);
  }
  j["keys"] = std::move(keys);
  j["tables"] = std::move(tables);
  j["skipped"] = skipped_;
  return j;
}

std::string store_json_text(const Store& store) {
  return store.to_json().dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace blosc2fs
