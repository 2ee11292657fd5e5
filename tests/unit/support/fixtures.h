// Access to ../shared/fixtures for conformance tests: files, gunzipped expectations.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bytes.h"

namespace blosc2fs::testing {

std::filesystem::path fixtures_dir();
// ../shared/fixtures-extra beside fixtures_dir(): older writers, other programs, edited frames.
std::filesystem::path fixtures_extra_dir();
std::filesystem::path frame_path(const std::string& name);  // fixtures/frames/NAME
// tests/data/NAME: frames the fuzzers found, kept as regression inputs.
std::filesystem::path hostile_frame_path(const std::string& name);
// Every frame in fixtures/frames (file or directory), sorted by name.
std::vector<std::string> fixture_frame_names();
// fixtures/expect/NAME.expect.json
nlohmann::json load_expect(const std::string& name);
// Every frame in fixtures-extra/frames, sorted by name.
std::vector<std::string> fixture_extra_frame_names();
// ROOT/expect/NAME.expect.json, ROOT being fixtures_dir() or fixtures_extra_dir().
nlohmann::json load_expect(const std::filesystem::path& root, const std::string& name);
// Decompressed contents of a .gz file (exists() false -> empty, check with has_*).
Bytes gunzip_file(const std::filesystem::path& path);
Bytes read_file(const std::filesystem::path& path);
Bytes hex_to_bytes(const std::string& hex);
// The characters of `text` as bytes.
Bytes text_bytes(const std::string& text);
// A fresh, empty temporary directory removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace blosc2fs::testing
