#include "s3_listing.h"

#include <expat.h>

#include <memory>
#include <stdexcept>
#include <utility>

#include "error.h"
#include "remote_url.h"

namespace blosc2fs {

namespace {

// Keys are at most 1,024 bytes; tokens are short. Longer text is refused.
constexpr size_t kMaxText = 4096;

struct ParserDeleter {
  void operator()(XML_Parser p) const { XML_ParserFree(p); }
};

struct State {
  S3ListingPage page;
  std::vector<std::string> path;  // open elements, namespace-free names
  std::string text;
  bool too_long = false;
  bool root_checked = false;
  bool wrong_root = false;
  bool url_encoded = false;
  std::string key;        // of the <Contents> being read
  int64_t size = -1;  // <EncodingType>url</EncodingType>: keys are form-encoded
};

// S3 encodes listed keys as a form does: %XX for a byte, '+' for a space.
std::string url_decode_key(const std::string& key) {
  auto decoded = percent_decode(key, PlusSign::space);
  if (!decoded) throw std::runtime_error("S3 listing: a key with a malformed %-escape");
  return std::move(*decoded);
}

std::string local_name(const XML_Char* name) {
  // With namespace processing, names come as "URI|local".
  std::string n(name);
  const size_t bar = n.rfind('|');
  return bar == std::string::npos ? n : n.substr(bar + 1);
}

void XMLCALL on_start(void* data, const XML_Char* name, const XML_Char**) {
  auto* s = static_cast<State*>(data);
  const std::string n = local_name(name);
  if (!s->root_checked) {
    s->root_checked = true;
    s->wrong_root = n != "ListBucketResult";
  }
  s->path.push_back(n);
  s->text.clear();
}

void XMLCALL on_end(void* data, const XML_Char*) {
  auto* s = static_cast<State*>(data);
  const size_t depth = s->path.size();
  if (depth == 3 && s->path[1] == "Contents" && s->path[2] == "Key") s->key = s->text;
  if (depth == 3 && s->path[1] == "Contents" && s->path[2] == "Size") {
    // At most 5 TiB: a number of at most 15 digits.
    s->size = -1;
    if (!s->text.empty() && s->text.size() <= 15 &&
        s->text.find_first_not_of("0123456789") == std::string::npos)
      s->size = std::stoll(s->text);
  }
  if (depth == 2 && s->path[1] == "Contents") {
    s->page.keys.push_back(std::move(s->key));
    s->page.sizes.push_back(s->size);
    s->key.clear();
    s->size = -1;
  }
  if (depth == 3 && s->path[1] == "CommonPrefixes" && s->path[2] == "Prefix") s->page.prefixes.push_back(s->text);
  if (depth == 2 && s->path[1] == "IsTruncated") s->page.truncated = s->text == "true";
  if (depth == 2 && s->path[1] == "NextContinuationToken") s->page.continuation = s->text;
  if (depth == 2 && s->path[1] == "EncodingType") s->url_encoded = s->text == "url";
  s->path.pop_back();
  s->text.clear();
}

void XMLCALL on_text(void* data, const XML_Char* text, int length) {
  auto* s = static_cast<State*>(data);
  if (s->text.size() + size_t(length) > kMaxText) {
    s->too_long = true;
    return;
  }
  s->text.append(text, size_t(length));
}

}  // namespace

S3ListingPage parse_s3_listing(const std::string& xml) {
  std::unique_ptr<XML_ParserStruct, ParserDeleter> parser(XML_ParserCreateNS(nullptr, '|'));
  if (!parser) throw std::runtime_error("S3 listing: expat cannot start");
  State state;
  XML_SetUserData(parser.get(), &state);
  XML_SetElementHandler(parser.get(), on_start, on_end);
  XML_SetCharacterDataHandler(parser.get(), on_text);
  // No DTDs, no external entities: the answer is data, never instructions.
  XML_SetParamEntityParsing(parser.get(), XML_PARAM_ENTITY_PARSING_NEVER);
  if (XML_Parse(parser.get(), xml.data(), int(xml.size()), 1) == XML_STATUS_ERROR)
    throw std::runtime_error(std::string("S3 listing: not well-formed XML (") +
                             XML_ErrorString(XML_GetErrorCode(parser.get())) + ")");
  if (state.wrong_root || !state.root_checked) throw std::runtime_error("S3 listing: not a ListBucketResult");
  if (state.too_long) throw std::runtime_error("S3 listing: a key or token longer than 4096 bytes");
  if (state.page.truncated && state.page.continuation.empty())
    throw std::runtime_error("S3 listing: a truncated page without a continuation token");
  if (state.url_encoded)
    for (std::string& key : state.page.keys) key = url_decode_key(key);
  if (state.url_encoded)
    for (std::string& prefix : state.page.prefixes) prefix = url_decode_key(prefix);
  return state.page;
}

S3LevelListing::S3LevelListing(std::string prefix, std::string place, size_t max_entries)
    : prefix_(std::move(prefix)), place_(std::move(place)), max_entries_(max_entries) {}

void S3LevelListing::add(const S3ListingPage& page) {
  auto single_part = [](const std::string& name) {
    return !name.empty() && name.find('/') == std::string::npos && is_safe_relative_name(name);
  };
  for (size_t i = 0; i < page.keys.size(); ++i) {
    const std::string& key = page.keys[i];
    if (!key.starts_with(prefix_)) continue;
    std::string rest = key.substr(prefix_.size());
    if (rest.empty()) continue;  // this directory's own marker
    ListedEntry e;
    if (rest.ends_with('/')) {  // a marker of a directory below (some servers list it as an object)
      rest.pop_back();
      e.type = ListedEntry::Type::directory;
    } else {
      e.size = i < page.sizes.size() ? page.sizes[i] : -1;
    }
    if (!single_part(rest)) {
      ++skipped_;
      continue;
    }
    e.name = rest;
    auto [it, made] = found_.try_emplace(e.name, e);
    if (!made && e.type == ListedEntry::Type::directory) it->second = e;
  }
  for (const std::string& p : page.prefixes) {
    if (!p.starts_with(prefix_)) continue;
    std::string rest = p.substr(prefix_.size());
    if (rest.ends_with('/')) rest.pop_back();
    if (!single_part(rest)) {
      ++skipped_;
      continue;
    }
    ListedEntry e;
    e.name = rest;
    e.type = ListedEntry::Type::directory;
    found_[rest] = e;  // the directory wins over an object of the same name
  }
  if (found_.size() > max_entries_)
    throw FormatError(place_ + ": more than " + count_text(max_entries_) + " entries in one directory: refused");
}

std::vector<ListedEntry> S3LevelListing::entries() const {
  std::vector<ListedEntry> out;
  out.reserve(found_.size());
  for (const auto& [name, e] : found_) out.push_back(e);
  return out;
}

}  // namespace blosc2fs
