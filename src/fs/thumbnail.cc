#include "thumbnail.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "caterva2.h"
#include "collection_open.h"
#include "dataset_picture.h"
#include "error.h"
#include "exit_status.h"
#include "remote_origin.h"
#include "thread_name.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

// Ends the run with `status` after one line on stderr.
struct ThumbnailFailure {
  int status;
  std::string why;
};

// Decoded chunks kept while drawing: each leaves once its last needed block is drawn.
constexpr uint64_t kThumbnailCacheBudget = 64 << 20;

// OUTPUT is opened only once the PNG is whole in memory, and written in place:
// thumbnail services hand over a file they made and hold open (tumbler reads
// it back through its own descriptor), which a rename onto it would leave
// empty. The deadline and the writer agree under one mutex on who finishes.
struct Finish {
  std::mutex mutex;
  bool done = false;
};

// Ends the process with one line when the thumbnail is not written in time
// (a file manager waits for it; a hostile file may make any drawing slow).
class Deadline {
 public:
  Deadline(Finish& finish, std::string frame)
      : thread_([&finish, frame = std::move(frame)](std::stop_token stop) {
          name_this_thread("b2fs-deadline");
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock(m);
          if (cv.wait_for(lock, stop, kThumbnailDeadline, [] { return false; }) || stop.stop_requested()) return;
          std::lock_guard guard(finish.mutex);
          if (finish.done) return;
          std::fprintf(stderr,
                       "blosc2fs: cannot draw a thumbnail of %s: not drawn within %lld s (the blocks it needs take "
                       "longer to read and decode): given up\n",
                       frame.c_str(), static_cast<long long>(kThumbnailDeadline.count()));
          std::fflush(stderr);
          ::_exit(kExitInternal);
        }) {}

 private:
  std::jthread thread_;
};

// File managers run thumbnailers on every file they show: whatever a file
// claims, this process never holds more than kThumbnailAddressSpace (an
// allocation past it fails, and the run ends with one line).
void limit_address_space() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0) return;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur <= kThumbnailAddressSpace) return;
  limit.rlim_cur = kThumbnailAddressSpace;
  ::setrlimit(RLIMIT_AS, &limit);
}

// The local FRAME as a mount opens it: a store, else a (sparse) frame.
DatasetPicture open_local(const fs::path& path, int64_t size) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ThumbnailFailure{kExitFrameMissing, ec ? ec.message() : "no such file or directory"};
  if (is_local_collection(path))
    throw ThumbnailFailure{kExitFrameInvalid, "a folder of datasets has no single picture"};
  try {
    if (is_local_store(path)) return DatasetPicture(DatasetContent::open_local_store(path), size, kThumbnailMaxLeaves);
    // A file manager inside a sparse frame's folder shows its index file
    // (application/x-blosc2-sparse-frame): its picture is the folder's array.
    if (path.filename() == "chunks.b2frame" && fs::is_regular_file(path, ec)) {
      std::optional<DatasetContent> sparse;
      try {
        sparse = DatasetContent::open_local_frame(path.parent_path());
      } catch (const std::runtime_error&) {  // not a sparse frame after all: the file as it is
      }
      if (sparse) return DatasetPicture(*sparse, size, kThumbnailMaxLeaves);
    }
    return DatasetPicture(DatasetContent::open_local_frame(path), size, kThumbnailMaxLeaves);
  } catch (const IoError& e) {
    throw ThumbnailFailure{kExitFrameMissing, e.what()};
  } catch (const FormatError& e) {
    throw ThumbnailFailure{kExitFrameInvalid, std::string("not a usable Blosc2 frame nor a store: ") + e.what()};
  }
}

// A URL as a mount opens it; `shutdown` ends its transport.
DatasetPicture open_remote(const Options& o, int64_t size, std::function<void()>& shutdown) {
  RemoteOrigin origin;
  try {
    if (is_caterva2_url(o.frame.string())) {
      CollectionMount c2 = open_caterva2(o, kThumbnailCacheBudget);
      if (c2.tree) {
        c2.origin.shutdown();
        throw ThumbnailFailure{kExitFrameInvalid, "a Caterva2 directory of datasets has no single picture"};
      }
      origin = std::move(c2.origin);
    } else {
      origin = open_remote_origin(o);
    }
  } catch (const RemoteOpenError& e) {
    throw ThumbnailFailure{e.status, e.why};
  }
  shutdown = origin.shutdown;
  try {
    return DatasetPicture(DatasetContent::open_remote(origin.source), size, kThumbnailMaxLeaves);
  } catch (const IoError& e) {
    throw ThumbnailFailure{kExitFrameMissing, e.what()};
  } catch (const FormatError& e) {
    throw ThumbnailFailure{kExitFrameInvalid, std::string("not a usable Blosc2 frame nor a store: ") + e.what()};
  }
}

// preview.png's drawing through a chunk cache of its own.
Bytes draw(const DatasetPicture& picture) {
  try {
    return picture.draw_png(kThumbnailCacheBudget);
  } catch (const FormatError& e) {
    throw ThumbnailFailure{kExitFrameInvalid, std::string("the array cannot be read: ") + e.what()};
  } catch (const IoError& e) {
    throw ThumbnailFailure{kExitFrameMissing, std::string("the array cannot be read: ") + e.what()};
  }
}

void write_png(const fs::path& output, const Bytes& png, Finish& finish) {
  // The deadline waits for a write under way, and finds it done.
  std::lock_guard guard(finish.mutex);
  auto fail = [&](int error) {
    return ThumbnailFailure{kExitMountpoint, "cannot write " + output.string() + ": " + std::strerror(error)};
  };
  const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw fail(errno);
  size_t done = 0;
  int error = 0;
  while (done < png.size()) {
    const ssize_t n = ::write(fd, png.data() + done, png.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += size_t(n);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    ::unlink(output.c_str());  // a part of a PNG is no thumbnail
    throw fail(error);
  }
  finish.done = true;
}

}  // namespace

int run_thumbnail(const Options& o) {
  const std::string shown = frame_for_messages(o.frame.string());
  limit_address_space();
  Finish finish;
  // A URL's transport: its requests end before the process does, on every path.
  struct Shutdown {
    std::function<void()> call;
    ~Shutdown() {
      if (call) call();
    }
  } transport;
  std::function<void()>& shutdown = transport.call;
  try {
    Deadline deadline(finish, shown);
    const DatasetPicture picture = is_remote_url(o.frame.string()) ? open_remote(o, o.thumbnail_size, shutdown)
                                                                   : open_local(fs::absolute(o.frame), o.thumbnail_size);
    const Bytes png = draw(picture);
    write_png(o.thumbnail_output, png, finish);
    return kExitOk;
  } catch (const ThumbnailFailure& f) {
    std::fprintf(stderr, "blosc2fs: cannot draw a thumbnail of %s: %s\n", shown.c_str(), f.why.c_str());
    return f.status;
  } catch (const NoPicture& e) {
    std::fprintf(stderr, "blosc2fs: cannot draw a thumbnail of %s: %s\n", shown.c_str(), e.what());
    return kExitFrameInvalid;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "blosc2fs: cannot draw a thumbnail of %s: it needs more memory than the 1 GiB a thumbnail may use\n",
                 shown.c_str());
    return kExitInternal;
  }
}

}  // namespace blosc2fs
