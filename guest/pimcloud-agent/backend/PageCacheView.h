// The page cache of the files a process has open, seen through read-only shared mappings
// of the agent's own. HeteroOS-LRU (seed 002) evicts inactive I/O page-cache pages from
// fast memory, pages the service may never map (read(2) of a database or an index), and
// move_pages moves only mapped pages: mapped here, they move for every process.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pimcloud {

class PageCacheView {
 public:
  PageCacheView(std::string procRoot, std::size_t pageBytes)
      : procRoot_(std::move(procRoot)), pageBytes_(pageBytes) {}
  ~PageCacheView();
  PageCacheView(const PageCacheView&) = delete;
  PageCacheView& operator=(const PageCacheView&) = delete;

  struct Page {
    std::uintptr_t addr;  // in this process
    std::uint64_t pfn;    // 0 without CAP_SYS_ADMIN
  };
  struct Scan {
    std::vector<Page> pages;
    std::size_t files = 0;   // regular files the process has open
    std::size_t cached = 0;  // of their pages, those in the page cache (mincore)
  };
  // Maps the regular files process `pid` has open (its earlier mappings are dropped) and
  // faults in up to maxPages of their cached pages, going on where the last scan of each
  // file stopped. Only cached pages are touched (mincore first, readahead off): the scan
  // reads nothing from disk, bar a page evicted in between.
  Scan scan(int pid, std::size_t maxPages);
  // Drops the mappings of `pid` (its moves are done, or it exited).
  void release(int pid);

 private:
  struct Mapping {
    void* addr;
    std::size_t bytes;
  };
  std::string procRoot_;
  std::size_t pageBytes_;
  std::map<int, std::vector<Mapping>> maps_;
  std::map<std::pair<dev_t, ino_t>, std::size_t> cursor_;  // next page to scan, per file
};

}  // namespace pimcloud
