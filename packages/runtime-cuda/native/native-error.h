// The one exception type native code throws for expected failures; `code` is a FerrumErrorCode string that
// the TS wrapper turns into a FerrumError.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ferrum {

class NativeError : public std::runtime_error {
 public:
  NativeError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

}  // namespace ferrum
