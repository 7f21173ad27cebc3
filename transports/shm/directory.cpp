#include "transports/shm/directory.hpp"

#include "errors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <new>
#include <utility>

namespace chorus::shm {

Directory& Directory::operator=(Directory&& o) noexcept {
  std::swap(base_, o.base_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

Directory::~Directory() {
  if (base_) munmap(base_, bytes_);
}

Directory Directory::map(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throwSystemError("shm: mmap of " + name);
  Directory d;
  d.base_ = p;
  d.bytes_ = bytes;
  return d;
}

Directory Directory::create(const std::string& name, int nranks) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throwSystemError("shm_open(" + name + ")");
  const size_t bytes = sizeof(DirectoryEntry) * static_cast<size_t>(nranks);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    shm_unlink(name.c_str());
    throwSystemError("ftruncate of " + name + " (is /dev/shm large enough?)");
  }
  Directory d = map(fd, bytes, name);
  for (int r = 0; r < nranks; ++r) new (&d.entry(r)) DirectoryEntry{-1, -1, 0, {}};
  return d;
}

Directory Directory::open(const std::string& name, int nranks) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) throwSystemError("shm_open(" + name + ")");
  struct stat st {};
  if (fstat(fd, &st) != 0 ||
      static_cast<size_t>(st.st_size) != sizeof(DirectoryEntry) * static_cast<size_t>(nranks)) {
    ::close(fd);
    throw Error(Result::InternalError, "shm segment " + name + " is not ours");
  }
  return map(fd, static_cast<size_t>(st.st_size), name);
}

}  // namespace chorus::shm
