// Where remote credentials come from, never from options or URLs: S3 keys from
// the AWS environment variables or the AWS credentials file, request headers
// (a bearer token) from a file only its owner may read. ~/.netrc is libcurl's.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace blosc2fs {

struct S3Keys {
  std::string access_key, secret_key, session_token;
};

// AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else the
// profile AWS_PROFILE (default "default") of AWS_SHARED_CREDENTIALS_FILE
// (default ~/.aws/credentials); nullopt when neither has keys (unsigned
// requests, for public buckets). Throws std::runtime_error for a named profile
// that is missing or half-filled.
std::optional<S3Keys> find_s3_keys();
// The keys of `profile` in an AWS credentials file's text (INI sections).
std::optional<S3Keys> parse_aws_credentials(const std::string& text, const std::string& profile);

// "Name: value" lines of FILE (blank lines and '#' comments skipped). Throws
// std::runtime_error when the file is readable by group or others, a line is
// not a header, or a name or value holds a control character.
std::vector<std::string> read_header_file(const std::filesystem::path& file);

}  // namespace blosc2fs
