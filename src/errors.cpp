#include "errors.hpp"

#include <cerrno>
#include <cstring>

namespace chorus {

void throwSystemError(const std::string& what) {
  int err = errno;  // capture before anything else can change it
  throw Error(Result::SystemError, what + ": " + std::strerror(err));
}

}  // namespace chorus
