#include "backend/PageCacheView.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "backend/ProcMaps.h"

namespace pimcloud {

PageCacheView::~PageCacheView() {
  for (const auto& [pid, maps] : maps_) {
    for (const Mapping& m : maps) ::munmap(m.addr, m.bytes);
  }
}

void PageCacheView::release(int pid) {
  auto it = maps_.find(pid);
  if (it == maps_.end()) return;
  for (const Mapping& m : it->second) ::munmap(m.addr, m.bytes);
  maps_.erase(it);
}

PageCacheView::Scan PageCacheView::scan(int pid, std::size_t maxPages) {
  release(pid);
  Scan out;
  const std::string fdDir = procRoot_ + "/" + std::to_string(pid) + "/fd";
  DIR* dir = ::opendir(fdDir.c_str());
  if (dir == nullptr) return out;
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::string> fds;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') fds.push_back(fdDir + "/" + e->d_name);
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::size_t budget = maxPages;
  for (const std::string& path : fds) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) continue;
    const auto key = std::make_pair(st.st_dev, st.st_ino);
    if (!seen.insert(key).second) continue;
    ++out.files;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
    const int file = fd >= 0 ? fd : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file < 0) continue;
    const std::size_t bytes = static_cast<std::size_t>(st.st_size);
    void* addr = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, file, 0);
    ::close(file);
    if (addr == MAP_FAILED) continue;
    // The agent locks its memory (mlockall MCL_FUTURE | MCL_ONFAULT): not this mapping,
    // or every page touched here would become unevictable and leave the LRU lists.
    ::munlock(addr, bytes);
    ::madvise(addr, bytes, MADV_RANDOM);  // a fault reads no neighbours
    maps_[pid].push_back({addr, bytes});
    const std::size_t pages = (bytes + pageBytes_ - 1) / pageBytes_;
    std::vector<unsigned char> resident(pages);
    if (::mincore(addr, bytes, resident.data()) != 0) continue;
    std::size_t& next = cursor_[key];
    if (next >= pages) next = 0;
    const auto base = reinterpret_cast<std::uintptr_t>(addr);
    std::vector<std::uintptr_t> touched;
    for (std::size_t n = 0; n < pages; ++n) {
      const std::size_t i = (next + n) % pages;
      if (!(resident[i] & 1)) continue;
      ++out.cached;
      if (budget == 0) continue;
      // Map the cached page into this process (a minor fault): move_pages can then see it.
      const volatile char* p = reinterpret_cast<const volatile char*>(base + i * pageBytes_);
      (void)*p;
      touched.push_back(base + i * pageBytes_);
      --budget;
      if (budget == 0) next = (i + 1) % pages;
    }
    if (touched.empty()) continue;
    const auto entries = readPagemap(procRoot_ + "/self/pagemap", base, base + pages * pageBytes_,
                                     pageBytes_);
    for (std::uintptr_t a : touched) {
      const std::size_t i = (a - base) / pageBytes_;
      if (i < entries.size() && entries[i].present) out.pages.push_back({a, entries[i].pfn});
    }
  }
  return out;
}

}  // namespace pimcloud
