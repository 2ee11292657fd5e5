// One request to a server, attempted until its answer is accepted: the
// transport's verdict on an answer (what another attempt may change, what it
// cannot), jittered exponential backoff within the client's attempts and
// deadline, Retry-After, and one more login when a session cookie is refused.
#pragma once

#include <functional>
#include <string>

#include "remote_client.h"

namespace blosc2fs {

enum class Verdict { ok, retry, fail };

struct Outcome {
  Verdict verdict = Verdict::ok;
  int error = 0;  // the errno to report when it fails
  std::string why;
};

// The transport's part of the verdict: shutdown, TLS, connection errors,
// 429/5xx (retry), 401/403 (EACCES), 404 (ENOENT), redirects not followed.
Outcome transport_outcome(const HttpAnswer& answer);

// Runs `request` until the transport and then `judge` accept the answer (the
// judge alone decides the request's judged_statuses).
// Throws IoError "what: why" with the last reason and its errno.
HttpAnswer perform_with_retries(RemoteClient& client, HttpRequest request, const std::string& what,
                                const std::function<Outcome(const HttpAnswer&)>& judge);

}  // namespace blosc2fs
