#include "credentials.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace blosc2fs {

namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if (std::iscntrl(c) && c != '\t') return true;
  return false;
}

}  // namespace

std::optional<S3Keys> parse_aws_credentials(const std::string& text, const std::string& profile) {
  std::istringstream in(text);
  std::string line, section;
  S3Keys keys;
  bool found = false;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    if (section != profile) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    found = true;
    if (name == "aws_access_key_id") keys.access_key = value;
    else if (name == "aws_secret_access_key") keys.secret_key = value;
    else if (name == "aws_session_token") keys.session_token = value;
  }
  if (!found || keys.access_key.empty() || keys.secret_key.empty()) return std::nullopt;
  return keys;
}

std::optional<S3Keys> find_s3_keys() {
  S3Keys keys{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
  if (!keys.access_key.empty() && !keys.secret_key.empty()) return keys;
  const std::string named = env("AWS_PROFILE");
  const std::string profile = named.empty() ? "default" : named;
  std::string file = env("AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty() && !env("HOME").empty()) file = env("HOME") + "/.aws/credentials";
  std::ifstream in(file);
  if (!in) {
    if (!named.empty()) throw std::runtime_error("AWS_PROFILE=" + named + " but no credentials file " + file);
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::optional<S3Keys> found = parse_aws_credentials(text.str(), profile);
  if (!found && !named.empty())
    throw std::runtime_error("profile " + named + " has no aws_access_key_id and aws_secret_access_key in " + file);
  return found;
}

std::vector<std::string> read_header_file(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    throw std::runtime_error("http_header_file " + file.string() + ": " + std::strerror(errno));
  if (st.st_mode & 077)
    throw std::runtime_error("http_header_file " + file.string() +
                             " may be read by others (it holds credentials): chmod 600 it");
  std::ifstream in(file);
  if (!in) throw std::runtime_error("http_header_file " + file.string() + ": cannot read it");
  std::vector<std::string> headers;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t colon = t.find(':');
    const std::string name = colon == std::string::npos ? "" : trim(t.substr(0, colon));
    bool token = !name.empty();
    for (unsigned char c : name) token = token && (std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c));
    // The line itself is never quoted: it may hold the secret.
    if (!token || has_control(t))
      throw std::runtime_error("http_header_file " + file.string() + " line " + std::to_string(number) +
                               " is not a \"Name: value\" header");
    headers.push_back(name + ": " + trim(t.substr(colon + 1)));
  }
  return headers;
}

}  // namespace blosc2fs
