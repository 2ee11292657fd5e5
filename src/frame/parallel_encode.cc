#include "parallel_encode.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "thread_name.h"

namespace blosc2fs {

std::vector<EncodedChunk> encode_in_parallel(std::span<const ByteSpan> inputs,
                                             const std::function<Bytes(ByteSpan, unsigned)>& encode,
                                             unsigned threads) {
  std::vector<EncodedChunk> out(inputs.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const unsigned per_input = inputs.empty() ? 1 : std::max<unsigned>(1, unsigned(threads / inputs.size()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < inputs.size();) {
      try {
        out[i].stored = encode(inputs[i], per_input);
      } catch (...) {
        out[i].error = std::current_exception();
      }
    }
  };
  const size_t helpers = std::min<size_t>(threads, inputs.size()) - (inputs.empty() ? 0 : 1);
  std::vector<std::jthread> pool;
  pool.reserve(helpers);
  try {
    for (size_t t = 0; t < helpers; ++t)
      pool.emplace_back([&] {
        name_this_thread("b2fs-encode");
        work();
      });
  } catch (const std::system_error&) {
    // No more threads: the ones started and this one do the rest.
  }
  work();
  pool.clear();  // joins: every result is in
  return out;
}

}  // namespace blosc2fs
