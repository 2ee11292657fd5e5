// Errors raised by the format library. Everything read from a frame is untrusted:
// malformed input raises FormatError with a message naming what is wrong, never UB.
#pragma once

#include <stdexcept>
#include <string>

namespace blosc2fs {

// The bytes do not form what they claim to be (truncated, corrupt, out of bounds).
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Well-formed, but uses a feature this implementation does not decode
// (plugin or user codecs and filters, lazy chunks found on disk, ...).
class UnsupportedError : public FormatError {
 public:
  using FormatError::FormatError;
};

// A system call failed; carries errno so the FUSE layer can report it as is.
class IoError : public std::runtime_error {
 public:
  IoError(const std::string& what, int err) : std::runtime_error(what), errno_(err) {}
  int error_number() const { return errno_; }

 private:
  int errno_;
};

// Throws IoError for the current errno: "<what>: <strerror>".
[[noreturn]] void throw_errno(const std::string& what);

// A number as messages write it: "1000000", "-1".
inline std::string str(int64_t n) { return std::to_string(n); }

// A count as messages write it, in groups of three digits: "1,000,000".
std::string count_text(unsigned long long n);

// Runs f(), prefixing any error message with `context` (keeping the error
// type), so the one line a user sees names the frame, chunk or block.
template <class F>
auto with_error_context(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(context + e.what());
  } catch (const FormatError& e) {
    throw FormatError(context + e.what());
  } catch (const IoError& e) {
    throw IoError(context + e.what(), e.error_number());
  }
}

}  // namespace blosc2fs
