// What a transport lends the striping layer: numbered paths (TCP connections, QPs, NICs),
// each an ordered, reliable byte stream. Every call returns at once.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace chorus::stripe {

class PathIo {
 public:
  static constexpr ssize_t kWouldBlock = -EAGAIN;
  virtual ~PathIo() = default;
  // Writes a prefix of the iovecs: the bytes written (> 0), kWouldBlock, or -errno.
  virtual ssize_t write(int path, const iovec* iov, int count) = 0;
  // Reads into the iovecs: the bytes read (> 0), 0 at end of stream, kWouldBlock, or -errno.
  virtual ssize_t read(int path, const iovec* iov, int count) = 0;
  // Bytes written to `path` that the far end has not acknowledged yet (queued or in
  // flight), or -1 when the transport cannot tell.
  virtual int64_t backlog(int path) = 0;
  // Told after a read or write on `path` moved bytes of a chunk of `chunkBytes` (the
  // size a sender writes or a receiver waits for). TCP takes large chunks out of
  // delayed-ACK pingpong mode here (tcp_channel.cpp); the default does nothing.
  virtual void transferred(int path, size_t chunkBytes) {
    (void)path;
    (void)chunkBytes;
  }
};

}  // namespace chorus::stripe
