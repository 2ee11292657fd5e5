// store.json: what Store::to_json says (made once: it opens every leaf), with a
// remote store's live fields (its counters) laid over it, made anew when asked.
// Its own lock, not the tree's: making it takes a while.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "store.h"
#include "thread_safety.h"

namespace blosc2fs {

class StoreJsonText {
 public:
  // `live`: the fields laid over the store's own; empty for none.
  StoreJsonText(const Store& store, std::function<Json()> live) : store_(store), live_(std::move(live)) {}

  // The text; made anew when `renew` and there are live fields.
  std::shared_ptr<const std::string> text(bool renew = false) EXCLUDES(mutex_);

 private:
  const Store& store_;
  const std::function<Json()> live_;
  Mutex mutex_;
  Json base_ GUARDED_BY(mutex_);
  std::shared_ptr<const std::string> text_ GUARDED_BY(mutex_);
};

}  // namespace blosc2fs
