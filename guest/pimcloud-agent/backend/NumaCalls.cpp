#include "backend/NumaCalls.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pimcloud {
namespace {

// From <linux/mempolicy.h>, to avoid a libnuma dependency.
constexpr int kMpolDefault = 0;
constexpr int kMpolPreferred = 1;
constexpr int kMpolBind = 2;
constexpr int kMpolInterleave = 3;
constexpr int kMpolPreferredMany = 5;  // Linux 5.15+
constexpr int kMpolMfMove = 1 << 1;

}  // namespace

MovePagesCall realMovePages() {
  return [](int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags) {
    return ::syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
  };
}

std::vector<int> queryPageNodes(const MovePagesCall& call, int pid,
                                const std::vector<std::uintptr_t>& pages, std::size_t chunkPages) {
  std::vector<int> out(pages.size(), kStatusUnset);
  for (std::size_t at = 0; at < pages.size(); at += chunkPages) {
    const std::size_t n = std::min(chunkPages, pages.size() - at);
    std::vector<void*> addrs(n);
    for (std::size_t i = 0; i < n; ++i) addrs[i] = reinterpret_cast<void*>(pages[at + i]);
    if (call(pid, n, addrs.data(), nullptr, out.data() + at, 0) < 0) {
      std::fill(out.begin() + static_cast<long>(at), out.begin() + static_cast<long>(at + n), -errno);
    }
  }
  return out;
}

MoveResult movePagesChunked(const MovePagesCall& call, int pid,
                            const std::vector<std::uintptr_t>& pages, int node,
                            MoveOptions options) {
  MoveResult r;
  const std::size_t chunk = std::max<std::size_t>(options.chunkPages, 1);
  for (std::size_t at = 0; at < pages.size(); at += chunk) {
    const std::size_t whole = std::min(chunk, pages.size() - at);
    // Where the pages are now: a page already on the target is not a page moved (the
    // kernel's status after the call reads the same for both).
    const std::vector<std::uintptr_t> span(pages.begin() + static_cast<long>(at),
                                           pages.begin() + static_cast<long>(at + whole));
    const std::vector<int> before = queryPageNodes(call, pid, span, chunk);
    if (!before.empty() && before.front() == -ESRCH) {
      r.status = Status::failure("process " + std::to_string(pid) + " is gone", true);
      return r;
    }
    std::vector<std::uintptr_t> part;
    for (std::size_t i = 0; i < whole; ++i) {
      if (before[i] == node) {
        ++r.alreadyThere;
        r.foundThere.push_back(span[i]);
      } else {
        part.push_back(span[i]);
      }
    }
    const std::size_t n = part.size();
    if (n == 0) continue;
    std::vector<void*> addrs(n);
    for (std::size_t i = 0; i < n; ++i) addrs[i] = reinterpret_cast<void*>(part[i]);
    std::vector<int> nodes(n, node);
    std::vector<int> status(n, kStatusUnset);  // pre-filled: unwritten entries show
    const long rc = call(pid, n, addrs.data(), nodes.data(), status.data(), kMpolMfMove);
    const int err = rc < 0 ? errno : 0;
    if (rc < 0 && err == ESRCH) {
      r.status = Status::failure("process " + std::to_string(pid) + " is gone", true);
      return r;
    }
    // Where every page is now, whatever the call's status says: entries may be unwritten
    // (a failed batch), and one address of a transparent huge page moves all 512 of its
    // base pages, whose own entries then read EBUSY or are never reached.
    const std::vector<int> after = queryPageNodes(call, pid, part, chunk);
    for (std::size_t i = 0; i < n; ++i) {
      if (after[i] == node) {
        ++r.moved;
        r.movedPages.push_back(part[i]);
      } else {
        ++r.failed;
        if (status[i] == -ENOMEM) r.targetFull = true;
        if (status[i] == -EBUSY) ++r.busy;
      }
    }
    if (rc < 0 && err == ENOMEM) r.targetFull = true;
    if (rc < 0 && err != ENOMEM) {
      r.status = Status::failure(std::string("move_pages: ") + std::strerror(err));
    }
    if (r.targetFull) {
      // Stop at a full stack; the rest stays where it is.
      r.failed += pages.size() - (at + whole);
      break;
    }
  }
  return r;
}

unsigned long NodeMask::maxnode() const { return words.size() * 8 * sizeof(unsigned long) + 1; }

NodeMask NodeMask::of(const std::vector<int>& nodes) {
  NodeMask m;
  const std::size_t bits = 8 * sizeof(unsigned long);
  for (int n : nodes) {
    if (n < 0) continue;
    const std::size_t w = static_cast<std::size_t>(n) / bits;
    if (m.words.size() <= w) m.words.resize(w + 1, 0);
    m.words[w] |= 1UL << (static_cast<std::size_t>(n) % bits);
  }
  if (m.words.empty()) m.words.push_back(0);
  return m;
}

Status applyMemPolicy(const MemPolicySpec& spec) {
  int mode = kMpolDefault;
  if (spec.mode == MemPolicySpec::Mode::Preferred) mode = kMpolPreferred;
  if (spec.mode == MemPolicySpec::Mode::Interleave) mode = kMpolInterleave;
  if (spec.mode == MemPolicySpec::Mode::Bind) mode = kMpolBind;
  if (spec.mode == MemPolicySpec::Mode::PreferredMany) mode = kMpolPreferredMany;
  long rc = 0;
  if (mode == kMpolDefault) {
    rc = ::syscall(SYS_set_mempolicy, mode, nullptr, 0UL);
  } else {
    const NodeMask mask = NodeMask::of(spec.nodes);
    rc = ::syscall(SYS_set_mempolicy, mode, mask.words.data(), mask.maxnode());
  }
  if (rc != 0) return Status::failure(std::string("set_mempolicy: ") + std::strerror(errno));
  return Status::success();
}

}  // namespace pimcloud
