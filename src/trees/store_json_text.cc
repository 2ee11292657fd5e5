#include "store_json_text.h"

namespace blosc2fs {

std::shared_ptr<const std::string> StoreJsonText::text(bool renew) {
  MutexLock lock(mutex_);
  if (!text_) base_ = store_.to_json();
  if (!text_ || (renew && live_)) {
    Json j = base_;
    if (live_) {
      const Json live = live_();
      for (auto it = live.begin(); it != live.end(); ++it) j[it.key()] = *it;
    }
    text_ = std::make_shared<const std::string>(j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  }
  return text_;
}

}  // namespace blosc2fs
