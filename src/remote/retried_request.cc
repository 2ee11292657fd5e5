#include "retried_request.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <optional>

#include <spdlog/spdlog.h>

#include "error.h"

namespace blosc2fs {

namespace {

// An S3 error's <Code> (never anything that could hold a secret).
std::string s3_error_code(const Bytes& body) {
  const std::string text(body.begin(), body.end());
  const size_t a = text.find("<Code>"), b = text.find("</Code>");
  if (a == std::string::npos || b == std::string::npos || b < a + 6 || b - a > 80) return {};
  std::string code = text.substr(a + 6, b - a - 6);
  for (char c : code)
    if (!std::isalnum(static_cast<unsigned char>(c))) return {};
  return code;
}

// Retry-After in seconds, when the server gave one.
std::optional<std::chrono::milliseconds> retry_after(const HttpAnswer& a) {
  int64_t seconds = 0;
  auto [end, ec] = std::from_chars(a.retry_after.data(), a.retry_after.data() + a.retry_after.size(), seconds);
  if (a.retry_after.empty() || ec != std::errc() || end != a.retry_after.data() + a.retry_after.size())
    return std::nullopt;
  return std::chrono::milliseconds(std::clamp<int64_t>(seconds, 0, 3600) * 1000);
}

}  // namespace

Outcome transport_outcome(const HttpAnswer& a) {
  if (a.aborted) return {Verdict::fail, EIO, "the mount is shutting down"};
  // A certificate that is not trusted stays so: no retry.
  if (a.curl_code == CURLE_PEER_FAILED_VERIFICATION || a.curl_code == CURLE_SSL_CACERT_BADFILE ||
      a.curl_code == CURLE_SSL_CERTPROBLEM)
    return {Verdict::fail, EACCES, "TLS: " + a.curl_error + " (-o ca_file= trusts a private CA)"};
  if (a.curl_code != CURLE_OK && !a.body_overflow) return {Verdict::retry, EIO, a.curl_error};
  if (a.status == 429 || a.status >= 500) return {Verdict::retry, EIO, "HTTP " + str(a.status)};
  if (a.status == 401 || a.status == 403) {
    const std::string code = s3_error_code(a.body);
    return {Verdict::fail, EACCES,
            "access denied (HTTP " + str(a.status) + (code.empty() ? "" : ", " + code) + "): check the credentials"};
  }
  if (a.status == 404) return {Verdict::fail, ENOENT, "no such object (HTTP 404)"};
  if (a.status >= 300 && a.status < 400)
    return {Verdict::fail, EIO,
            "redirected (HTTP " + str(a.status) +
                "), which S3 requests and -o http_header_file= never follow: mount the URL it points to"};
  return {};
}

HttpAnswer perform_with_retries(RemoteClient& client, HttpRequest request, const std::string& what,
                                const std::function<Outcome(const HttpAnswer&)>& judge) {
  const RemoteOptions& o = client.options();
  const auto deadline = std::chrono::steady_clock::now() + o.read_deadline;
  Outcome last;
  bool relogged = false;
  for (unsigned attempt = 1;; ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    request.timeout = std::max(left, std::chrono::milliseconds(1000));
    HttpAnswer answer = client.perform(request);
    const bool judged = answer.curl_code == 0 && !answer.aborted &&
                        std::find(request.judged_statuses.begin(), request.judged_statuses.end(), answer.status) !=
                            request.judged_statuses.end();
    last = judged ? Outcome{} : transport_outcome(answer);
    // A session cookie the server no longer takes: log in again, once per read.
    if (!request.sign_s3 && !relogged && !judged && (answer.status == 401 || answer.status == 403) &&
        !answer.aborted && answer.curl_code == 0) {
      relogged = true;
      bool again = false;
      try {
        again = client.reauthenticate();
      } catch (const std::exception& e) {
        spdlog::warn("{}: logging in again failed: {}", what, e.what());
      }
      if (again) continue;
    }
    if (last.verdict == Verdict::ok) last = judge(answer);
    if (last.verdict == Verdict::ok) return answer;
    if (last.verdict == Verdict::fail || attempt >= std::max(1u, o.max_attempts)) break;
    std::chrono::milliseconds pause = client.backoff(attempt);
    if (auto after = retry_after(answer)) pause = std::min(std::max(pause, *after), o.backoff_cap * 4);
    if (std::chrono::steady_clock::now() + pause >= deadline) {
      last.why += " (no time left for another attempt)";
      break;
    }
    spdlog::debug("{}: {}; attempt {} in {} ms", what, last.why, attempt + 1, pause.count());
    client.count_retry();
    if (!client.backoff_sleep(pause)) {
      last = {Verdict::fail, EIO, "the mount is shutting down"};
      break;
    }
  }
  if (last.error == 0) last.error = EIO;
  if (last.error == EIO) client.count_failure();
  throw IoError(what + ": " + last.why, last.error);
}

}  // namespace blosc2fs
