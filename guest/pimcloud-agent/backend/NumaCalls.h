// The NUMA system calls, used the careful way (ARCHITECTURE.md section 4):
//  - move_pages: the whole call can fail with ENOMEM when the target node fills while
//    some pages did move and their status entries stay unwritten, and one address of a
//    transparent huge page moves all of it. So: pre-fill status, move in chunks, and ask
//    where every page is before and after each call; count what changed.
//  - node masks: the kernel reads maxnode - 1 bits, so pass bits + 1.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/Machine.h"
#include "placement/Placement.h"

namespace pimcloud {

// move_pages(2) as a function, so the chunking logic can be tested against a kernel that
// fails the way the real one does. Returns the syscall's result; sets errno.
using MovePagesCall = std::function<long(int pid, unsigned long count, void** pages,
                                         const int* nodes, int* status, int flags)>;
MovePagesCall realMovePages();

inline constexpr int kStatusUnset = -100000;  // never a node number nor an -errno

struct MoveOptions {
  std::size_t chunkPages = 512;
};

MoveResult movePagesChunked(const MovePagesCall& call, int pid,
                            const std::vector<std::uintptr_t>& pages, int node,
                            MoveOptions options = {});
// Node of each page (query mode of move_pages); negative entries are -errno.
std::vector<int> queryPageNodes(const MovePagesCall& call, int pid,
                                const std::vector<std::uintptr_t>& pages,
                                std::size_t chunkPages = 512);

// A node mask for set_mempolicy/mbind/migrate_pages, with the maxnode the kernel wants.
struct NodeMask {
  std::vector<unsigned long> words;
  unsigned long maxnode() const;  // bits + 1
  static NodeMask of(const std::vector<int>& nodes);
};

// Applies a static placement to the calling process (inherited across fork and exec).
Status applyMemPolicy(const MemPolicySpec& spec);

}  // namespace pimcloud
