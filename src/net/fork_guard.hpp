// Chorus's sockets do not live on in a forked child. A child of a rank (a data-loader
// worker that Python forks, a shell-out by fork and exec) inherits every descriptor; were it
// to keep the rank's connections, the rank's death would close none of them, and its peers
// (and the store) would learn of the death only at the timeout. So, right after fork(),
// the child replaces its copy of each registered socket with /dev/null (pthread_atfork):
// the parent's connections stay as they were (a copy's close sends nothing), the child can
// no longer talk on them, and the descriptor numbers stay taken, so that a close the child
// makes later (a destructor) does not hit a file the child opened since.
//
// Not covered: a child made without fork()'s handlers (a raw clone, vfork without exec).
#pragma once

#include <cstddef>

namespace chorus::net {

// Registers `fd` (a socket this process owns) to be released in forked children.
void releaseInForkedChildren(int fd);
// Unregisters `fd`; call before closing it (or handing it to an owner that may not know).
void keepInForkedChildren(int fd);
// How many descriptors the last fork() released in this process (0 in a parent).
size_t releasedAtFork();

}  // namespace chorus::net
