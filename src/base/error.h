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

}  // namespace blosc2fs
