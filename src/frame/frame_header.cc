// Frame header and trailer: parsing and c-blosc2-identical serialization
// (format-notes §1.1, §1.2).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "codec_registry.h"
#include "frame.h"

namespace blosc2fs {

namespace {

constexpr uint8_t kMagic[8] = {'b', '2', 'f', 'r', 'a', 'm', 'e', 0};
constexpr int kFiltersOffset = 71;  // after the fixext16 marker (69) and its type byte (70)
constexpr int kMetalayerSectionOffset = kFrameHeaderMinLen;

int32_t load_be_i32(const uint8_t* p) { return int32_t(load_be32(p)); }
int64_t load_be_i64(const uint8_t* p) { return int64_t(load_be64(p)); }

// Reads a fixstr name (at most 31 bytes) at the reader's position.
std::string read_fixstr(ByteReader& in, const char* what) {
  uint8_t marker = in.u8();
  if ((marker & 0xE0) != 0xA0) in.fail(std::string("expected a fixstr ") + what);
  ByteSpan name = in.take(marker & 0x1F);
  return std::string(name.begin(), name.end());
}

// A name/offset map (DE n [fixstr D2 i32]*) followed by the contents each offset
// points to (C6 u32 len bytes), offsets measured from `base` within `data`.
struct NamedContent {
  std::string name;
  ByteSpan content;
};

std::vector<NamedContent> read_named_contents(ByteReader& in, ByteSpan data, int64_t base, size_t limit,
                                              size_t max_count, const std::string& context) {
  in.expect(0xDE, "a map16 (DE) of names");
  size_t n = in.be16();
  if (n > max_count)
    in.fail(std::to_string(n) + " entries, more than the " + std::to_string(max_count) + " allowed");
  std::vector<NamedContent> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string name = read_fixstr(in, "name");
    in.expect(0xD2, "an int32 (D2) offset");
    int64_t offset = int32_t(in.be32());
    int64_t pos = offset - base;
    if (offset < 0 || pos < 0 || size_t(pos) >= limit)
      in.fail("offset " + std::to_string(offset) + " of '" + name + "' is out of bounds");
    ByteReader at(data.first(limit), context + " '" + name + "'");
    at.seek(size_t(pos));
    at.expect(0xC6, "a bin32 (C6) marker");
    uint32_t len = at.be32();
    if (len > at.remaining()) at.fail("content of " + std::to_string(len) + " bytes does not fit");
    out.push_back({std::move(name), at.take(len)});
  }
  return out;
}

void append_fixstr(Bytes& out, const std::string& name, const char* what) {
  if (name.size() > size_t(kMaxMetalayerNameLen))
    throw FormatError(std::string(what) + " name '" + name + "' is longer than 31 bytes");
  out.push_back(uint8_t(0xA0 | name.size()));
  out.insert(out.end(), name.begin(), name.end());
}

// Map of names to offsets, then the array of contents; offsets are
// `position in out` + `offset_bias`.
void append_named_contents(Bytes& out, const std::vector<std::pair<const std::string*, ByteSpan>>& items,
                           int64_t offset_bias, const char* what) {
  if (items.size() > 0xFFFF) throw FormatError(std::string("too many ") + what + "s");
  out.push_back(0xDE);
  append_be16(out, uint16_t(items.size()));
  std::vector<size_t> offset_slots;
  for (const auto& [name, content] : items) {
    append_fixstr(out, *name, what);
    out.push_back(0xD2);
    offset_slots.push_back(out.size());
    append_be32(out, 0);
  }
  out.push_back(0xDC);
  append_be16(out, uint16_t(items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    int64_t offset = int64_t(out.size()) + offset_bias;
    if (offset > INT32_MAX) throw FormatError(std::string(what) + " offsets exceed 2 GiB");
    store_be32(out.data() + offset_slots[i], uint32_t(offset));
    ByteSpan content = items[i].second;
    if (content.size() > size_t(INT32_MAX))
      throw FormatError(std::string(what) + " '" + *items[i].first + "' is larger than 2 GiB");
    out.push_back(0xC6);
    append_be32(out, uint32_t(content.size()));
    out.insert(out.end(), content.begin(), content.end());
  }
}

}  // namespace

const char* frame_layout_name(FrameLayout layout) {
  switch (layout) {
    case FrameLayout::current: return "2.0.0-rc1+";
    case FrameLayout::beta1: return "2.0.0-beta.1";
    case FrameLayout::beta2: return "2.0.0-beta.2";
    case FrameLayout::beta3_5: return "2.0.0-beta.3..5";
  }
  return "unknown";
}

FrameLayout frame_header_layout(ByteSpan first) {
  if (first.size() < 26) throw FormatError("not a Blosc2 frame: " + std::to_string(first.size()) + " bytes");
  // c-blosc2 skips the magic for files; we check it so that a random file is
  // reported as "not a Blosc2 frame" rather than as some corrupt field.
  if (std::memcmp(first.data() + 2, kMagic, sizeof kMagic) != 0)
    throw FormatError("not a Blosc2 frame (no \"b2frame\" magic at byte 2)");
  const uint8_t elements = first[0];
  const uint8_t flags = first[25];
  auto refuse = [&](const char* why) -> FrameLayout {
    char text[160];
    std::snprintf(text, sizeof text, "frame header: fixarray 0x%02X with general_flags 0x%02X: %s", elements, flags,
                  why);
    throw FormatError(text);
  };
  switch (elements) {
    case 0x9B:
    case 0x9C:
      if ((flags & 0x0F) != 4) return refuse("a beta.1 header (11 or 12 elements) has format version 4");
      if ((flags & 0x30) != 0x20) return refuse("beta.1 wrote only 64-bit offsets (bits 4-5 = 2)");
      return FrameLayout::beta1;
    case 0x9D:
      if ((flags & 0x0F) != 1) return refuse("a beta.2 - beta.5 header (13 elements) has format version 1");
      if ((flags & 0x30) != 0x20) return refuse("beta.2 - beta.5 wrote only 64-bit offsets (bits 4-5 = 2)");
      return FrameLayout::beta3_5;
    default:
      // c-blosc2 does not check the fixarray marker of the current layout; neither do we.
      return FrameLayout::current;
  }
}

int frame_header_min_len(FrameLayout layout) {
  switch (layout) {
    case FrameLayout::beta1: return kBeta1HeaderLen;
    case FrameLayout::beta2:
    case FrameLayout::beta3_5: return kBeta2HeaderMinLen;
    case FrameLayout::current: break;
  }
  return kFrameHeaderMinLen;
}

namespace {

// The metalayer section (93 CD idx_size DE map DC array) at `at`, the same in every layout.
std::vector<Metalayer> parse_metalayer_section(ByteSpan whole, size_t at, const std::string& context) {
  ByteReader in(whole, context + " metalayers");
  in.seek(at + 1);  // the fixarray marker is not checked, as in c-blosc2
  in.expect(0xCD, "a uint16 (CD) index size");
  in.be16();
  std::vector<Metalayer> out;
  for (auto& item : read_named_contents(in, whole, 0, whole.size(), kMaxMetalayers, "metalayer"))
    out.push_back({std::move(item.name), Bytes(item.content.begin(), item.content.end())});
  return out;
}

// Fields at the same place in every layout: sizes and the flags string.
void parse_common_fields(const uint8_t* p, FrameHeader& h) {
  h.header_len = load_be_i32(p + 11);
  h.frame_len = load_be_i64(p + 16);
  h.general_flags = p[25];
  h.codec_flags = p[27];
  h.nbytes = load_be_i64(p + 30);
  h.cbytes = load_be_i64(p + 39);
  h.typesize = load_be_i32(p + 48);
}

void check_common_fields(const FrameHeader& h, size_t available, int min_len, const std::string& context) {
  if (h.header_len < min_len || size_t(h.header_len) > available)
    throw FormatError(context + ": header_len " + std::to_string(h.header_len) + " is out of range");
  if (h.typesize <= 0) throw FormatError(context + ": typesize " + std::to_string(h.typesize) + " is not positive");
  if (h.nbytes < 0 || h.cbytes < 0) throw FormatError(context + ": negative uncompressed or compressed size");
}

// The msgpack markers of an older header, checked: these layouts are told
// apart by their first bytes only, so a damaged one should fail here, clearly.
void check_markers(const uint8_t* p, std::initializer_list<std::pair<int, uint8_t>> markers,
                   const std::string& context) {
  for (auto [at, marker] : markers) {
    if (p[at] != marker) {
      char text[96];
      std::snprintf(text, sizeof text, ": byte 0x%02X is 0x%02X, expected the msgpack marker 0x%02X", at, p[at],
                    marker);
      throw FormatError(context + text);
    }
  }
}

// beta.1 (legacy-layouts.md): 11 elements, or 12 with the metalayer section at 0x40.
ParsedHeader parse_beta1_header(ByteSpan header) {
  const std::string context = "frame header (2.0.0-beta.1 layout)";
  const uint8_t* p = header.data();
  check_markers(p, {{1, 0xA8}, {10, 0xD2}, {15, 0xCF}, {24, 0xA4}, {29, 0xD3}, {38, 0xD3}, {47, 0xD2}, {52, 0xD2},
                    {57, 0xD1}, {60, 0xD1}},
                context);
  ParsedHeader parsed;
  FrameHeader& h = parsed.fixed;
  h.layout = FrameLayout::beta1;
  parse_common_fields(p, h);
  h.chunksize = load_be_i32(p + 53);
  h.nthreads_comp = int16_t(load_be16(p + 58));
  h.nthreads_decomp = int16_t(load_be16(p + 61));
  // Byte 0x1A is a constant 0x06 whatever the real filters (they are in each
  // chunk header); beta.1 itself reports filters[5] = bits 2-3 of it.
  h.filters[kMaxFilters - 1] = uint8_t((p[26] >> 2) & 3);
  check_common_fields(h, header.size(), kBeta1HeaderLen, context);
  const bool twelve = p[0] == 0x9C;
  if (p[63] != (twelve ? 0xC3 : 0xC2))
    throw FormatError(context + (twelve ? ": 12 elements but has_metalayers is not true (C3)"
                                        : ": 11 elements but has_metalayers is not false (C2)"));
  if (!twelve) {
    if (h.header_len != kBeta1HeaderLen)
      throw FormatError(context + ": 11 elements in " + std::to_string(h.header_len) + " bytes, not 64");
    return parsed;
  }
  if (h.header_len == kBeta1HeaderLen) throw FormatError(context + ": 12 elements but no metalayer section");
  parsed.metalayers = parse_metalayer_section(header.first(size_t(h.header_len)), kBeta1HeaderLen, context);
  return parsed;
}

// beta.2 - beta.5: 13 elements, compacted filters at 0x40, metalayers at 0x52.
ParsedHeader parse_beta2_header(ByteSpan header) {
  const std::string context = "frame header (2.0.0-beta.2..5 layout)";
  const uint8_t* p = header.data();
  check_markers(p, {{1, 0xA8}, {10, 0xD2}, {15, 0xCF}, {24, 0xA4}, {29, 0xD3}, {38, 0xD3}, {47, 0xD2}, {52, 0xD2},
                    {57, 0xD1}, {60, 0xD1}, {64, 0xD8}},
                context);
  ParsedHeader parsed;
  FrameHeader& h = parsed.fixed;
  h.layout = FrameLayout::beta3_5;
  parse_common_fields(p, h);
  h.chunksize = load_be_i32(p + 53);
  h.nthreads_comp = int16_t(load_be16(p + 58));
  h.nthreads_decomp = int16_t(load_be16(p + 61));
  // 0x3F has_usermeta is not kept: it goes stale (legacy-layouts.md); the trailer tells.
  if (p[63] != 0xC2 && p[63] != 0xC3) throw FormatError(context + ": byte 0x3F is not a msgpack bool");
  const int nfilters = p[65];
  constexpr int kSlots = 8;
  if (nfilters > kSlots) throw FormatError(context + ": " + std::to_string(nfilters) + " filters, more than 8");
  // The non-zero filters, compacted from slot 0 in pipeline order; reported as stored.
  for (int i = 0; i < kMaxFilters; ++i) {
    h.filters[i] = p[66 + i];
    h.filters_meta[i] = p[66 + kSlots + i];
  }
  check_common_fields(h, header.size(), kBeta2HeaderMinLen, context);
  parsed.metalayers = parse_metalayer_section(header.first(size_t(h.header_len)), kBeta2HeaderMinLen - 10, context);
  return parsed;
}

}  // namespace

ParsedHeader parse_frame_header(ByteSpan header) {
  const std::string context = "frame header";
  const FrameLayout layout = frame_header_layout(header.first(std::min<size_t>(header.size(), 26)));
  if (header.size() < size_t(frame_header_min_len(layout)))
    throw FormatError(context + ": " + std::to_string(header.size()) + " bytes, shorter than the " +
                      std::to_string(frame_header_min_len(layout)) + "-byte minimum of the " +
                      frame_layout_name(layout) + " layout");
  if (layout == FrameLayout::beta1) return parse_beta1_header(header);
  if (layout != FrameLayout::current) return parse_beta2_header(header);
  const uint8_t* p = header.data();

  ParsedHeader parsed;
  FrameHeader& h = parsed.fixed;
  parse_common_fields(p, h);
  h.frame_type = p[26];
  h.other_flags = p[28];
  h.blocksize = load_be_i32(p + 53);
  h.chunksize = load_be_i32(p + 58);
  h.nthreads_comp = int16_t(load_be16(p + 63));
  h.nthreads_decomp = int16_t(load_be16(p + 66));
  h.has_vlmetalayers = p[68] == 0xC3;
  int nfilters = p[70];
  h.udcodec = p[kFiltersOffset + kMaxFilters];
  h.compcode_meta = p[kFiltersOffset + kMaxFilters + 1];
  h.other_flags2 = p[85];

  if (h.version() > 3)
    throw FormatError(context + ": format version " + std::to_string(h.version()) + " is newer than 3");
  check_common_fields(h, header.size(), kFrameHeaderMinLen, context);
  if (nfilters > kMaxFilters) throw FormatError(context + ": " + std::to_string(nfilters) + " filters, more than 6");
  for (int i = 0; i < nfilters; ++i) {
    h.filters[i] = p[kFiltersOffset + i];
    h.filters_meta[i] = p[kFiltersOffset + kMaxFilters + 2 + i];
  }

  // Old writers may end the header right after the fixed part.
  if (h.header_len == kFrameHeaderMinLen) return parsed;
  parsed.metalayers = parse_metalayer_section(header.first(size_t(h.header_len)), kMetalayerSectionOffset, context);
  return parsed;
}

std::vector<Vlmetalayer> parse_frame_trailer(ByteSpan trailer) {
  ByteReader in(trailer, "frame trailer");
  if (trailer.size() < size_t(kFrameTrailerMinLen)) in.fail("shorter than 25 bytes");
  in.seek(3);  // fixarray, trailer version and the index fixarray are not checked, as in c-blosc2
  in.expect(0xCD, "a uint16 (CD) index size");
  in.be16();
  std::vector<Vlmetalayer> out;
  for (auto& item : read_named_contents(in, trailer, 0, trailer.size(), kMaxVlmetalayersRead, "vlmetalayer"))
    out.push_back({std::move(item.name), Bytes(item.content.begin(), item.content.end())});
  return out;
}

UsermetaTrailer parse_usermeta_trailer(ByteSpan trailer) {
  ByteReader in(trailer, "usermeta trailer");
  if (trailer.size() < size_t(kUsermetaTrailerMinLen)) in.fail("shorter than 30 bytes");
  UsermetaTrailer out;
  const uint8_t first = in.u8(), version = in.u8();
  // beta.2 wrote "0x09 + 4" where it meant the fixarray 0x94, and version 0.
  if (first == 0x0D && version == 0) out.layout = FrameLayout::beta2;
  else if (first == 0x94 && version == 1) out.layout = FrameLayout::beta3_5;
  else in.fail("starts with " + std::to_string(first) + " " + std::to_string(version) +
               ", neither beta.2's 0D 00 nor beta.3 - beta.5's 94 01");
  in.expect(0xC6, "a bin32 (C6) usermeta");
  const uint32_t len = in.be32();
  if (len > trailer.size() - kUsermetaTrailerMinLen)
    in.fail("usermeta of " + std::to_string(len) + " bytes does not fit in a trailer of " +
            std::to_string(trailer.size()));
  ByteSpan usermeta = in.take(len);
  out.usermeta.assign(usermeta.begin(), usermeta.end());
  return out;
}

Bytes serialize_frame_header(const FrameHeader& h, const std::vector<Metalayer>& metalayers) {
  if (metalayers.size() > size_t(kMaxMetalayers)) throw FormatError("more than 16 metalayers");
  Bytes out;
  out.reserve(256);
  out.push_back(0x9E);
  out.push_back(0xA8);
  out.insert(out.end(), kMagic, kMagic + sizeof kMagic);
  out.push_back(0xD2);
  append_be32(out, 0);  // header_len, patched below
  out.push_back(0xCF);
  append_be64(out, uint64_t(h.frame_len));
  out.push_back(0xA4);
  out.push_back(h.general_flags);
  out.push_back(h.frame_type);
  out.push_back(h.codec_flags);
  out.push_back(h.other_flags);
  out.push_back(0xD3);
  append_be64(out, uint64_t(h.nbytes));
  out.push_back(0xD3);
  append_be64(out, uint64_t(h.cbytes));
  for (int32_t v : {h.typesize, h.blocksize, h.chunksize}) {
    out.push_back(0xD2);
    append_be32(out, uint32_t(v));
  }
  for (int16_t v : {h.nthreads_comp, h.nthreads_decomp}) {
    out.push_back(0xD1);
    append_be16(out, uint16_t(v));
  }
  out.push_back(h.has_vlmetalayers ? 0xC3 : 0xC2);
  out.push_back(0xD8);
  out.push_back(uint8_t(kMaxFilters));
  out.insert(out.end(), h.filters.begin(), h.filters.end());
  out.push_back(h.udcodec);
  out.push_back(h.compcode_meta);
  out.insert(out.end(), h.filters_meta.begin(), h.filters_meta.end());
  out.push_back(h.other_flags2);
  out.push_back(0);

  // Metalayer section; its index size counts from the 93 byte to the end of the map.
  out.push_back(0x93);
  out.push_back(0xCD);
  size_t idx_size_at = out.size();
  append_be16(out, 0);
  std::vector<std::pair<const std::string*, ByteSpan>> items;
  for (const Metalayer& m : metalayers) items.emplace_back(&m.name, ByteSpan(m.content));
  size_t map_start = out.size();
  append_named_contents(out, items, 0, "metalayer");
  size_t map_len = 3;
  for (const Metalayer& m : metalayers) map_len += 1 + m.name.size() + 5;
  store_be16(out.data() + idx_size_at, uint16_t(map_start + map_len - kMetalayerSectionOffset));
  if (out.size() > size_t(INT32_MAX)) throw FormatError("frame header larger than 2 GiB");
  store_be32(out.data() + 11, uint32_t(out.size()));
  return out;
}

Bytes serialize_frame_trailer(const std::vector<Vlmetalayer>& vlmetalayers) {
  Bytes out{0x94, 0x01, 0x93, 0xCD, 0, 0};
  std::vector<std::pair<const std::string*, ByteSpan>> items;
  size_t map_len = 3;
  for (const Vlmetalayer& v : vlmetalayers) {
    items.emplace_back(&v.name, ByteSpan(v.stored));
    map_len += 1 + v.name.size() + 5;
  }
  // The trailer's index size excludes the 93 byte, unlike the header's.
  if (map_len + 3 > 0xFFFF) throw FormatError("too many vlmetalayers");
  store_be16(out.data() + 4, uint16_t(3 + map_len));
  append_named_contents(out, items, 0, "vlmetalayer");
  size_t total = out.size() + 5 + 18;
  if (total > size_t(INT32_MAX)) throw FormatError("frame trailer larger than 2 GiB");
  out.push_back(0xCE);
  append_be32(out, uint32_t(total));
  out.push_back(0xD8);
  out.push_back(0x00);
  out.insert(out.end(), 16, 0);
  return out;
}

namespace {
constexpr uint8_t kCompcodePlugin = 6;
constexpr uint8_t kBetaCompcodeSnappy = 3;
constexpr uint8_t kBetaCompcodeLizard = 6;
}  // namespace

const CodecInfo* frame_codec(const FrameHeader& h) {
  const uint8_t code = h.compcode();
  if (h.legacy()) {
    if (code == kBetaCompcodeLizard) return nullptr;
    return code == kBetaCompcodeSnappy || code <= 5 ? find_codec(code) : nullptr;
  }
  return find_codec(code == kCompcodePlugin ? h.udcodec : code);
}

std::string frame_codec_name(const FrameHeader& h) {
  if (h.legacy() && h.compcode() == kBetaCompcodeLizard) return "lizard";
  if (const CodecInfo* c = frame_codec(h)) return c->name;
  const bool plugin = !h.legacy() && h.compcode() == kCompcodePlugin;
  return "codec-" + std::to_string(plugin ? h.udcodec : h.compcode());
}

}  // namespace blosc2fs
