// A mount of a URL: the object or directory there, opened through the remote
// transport (src/remote), and how the mount describes where its bytes come from.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "frame_json.h"
#include "options.h"
#include "remote_client.h"
#include "store.h"

namespace blosc2fs {

struct RemoteOrigin {
  std::string url;     // for messages and fsname=: no credentials, no query
  StoreSource source;  // the object at the URL (file), or the place below it (directory)
  // frame.json's and store.json's "source": the URL, the object's identity and
  // the mount's counters as they are now.
  std::function<Json()> source_json;
  // Aborts every request in flight and refuses new ones: the unmount.
  std::function<void()> shutdown;
  // Around fuse_daemonize's fork: the transport's thread stops and starts again.
  std::function<void()> before_fork, after_fork;
};

// A URL that cannot be mounted: the exit status and one line saying why.
struct RemoteOpenError {
  int status;
  std::string why;
  int error = 0;  // the errno of what failed (ENOENT: nothing there), 0 when not an I/O failure
};

// The transport's settings from the mount's options.
RemoteOptions remote_options(const RemoteMountOptions& options);
// What the mount has fetched so far: requests, bytes, retries, cache hits, ...
Json counters_json(const RemoteClient& client);

// Exit status and line for a failure to open what a URL names (missing or
// refused: 2, ranges ignored: 3, anything else: unreachable, 7).
RemoteOpenError remote_open_error(const IoError& e);

// Opens the URL options.frame names: the object there, or when it names no
// object (or ends in '/'), the directory below it (a sparse frame, a .b2d).
// Throws RemoteOpenError.
RemoteOrigin open_remote_origin(const Options& options);

}  // namespace blosc2fs
