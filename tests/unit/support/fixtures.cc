#include "fixtures.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace blosc2fs::testing {

std::filesystem::path fixtures_dir() {
  if (const char* env = std::getenv("BLOSC2FS_FIXTURES")) return env;
  return BLOSC2FS_FIXTURES;
}

std::filesystem::path fixtures_extra_dir() { return fixtures_dir().parent_path() / "fixtures-extra"; }

std::filesystem::path frame_path(const std::string& name) { return fixtures_dir() / "frames" / name; }

std::filesystem::path hostile_frame_path(const std::string& name) {
  return std::filesystem::path(BLOSC2FS_TEST_DATA) / name;
}

static std::vector<std::string> frame_names_in(const std::filesystem::path& root) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(root / "frames"))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> fixture_frame_names() { return frame_names_in(fixtures_dir()); }

std::vector<std::string> fixture_extra_frame_names() { return frame_names_in(fixtures_extra_dir()); }

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

nlohmann::json load_expect(const std::string& name) { return load_expect(fixtures_dir(), name); }

nlohmann::json load_expect(const std::filesystem::path& root, const std::string& name) {
  Bytes text = read_file(root / "expect" / (name + ".expect.json"));
  return nlohmann::json::parse(text.begin(), text.end());
}

Bytes gunzip_file(const std::filesystem::path& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::runtime_error("cannot open " + path.string());
  Bytes out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(gz);
  if (n < 0) throw std::runtime_error("gzip error in " + path.string());
  return out;
}

Bytes hex_to_bytes(const std::string& hex) {
  Bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

Bytes text_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "blosc2fs-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace blosc2fs::testing
