// Parsers for /proc/<pid>/numa_maps, /proc/<pid>/maps and /proc/<pid>/pagemap, and the
// idle page bitmap (/sys/kernel/mm/page_idle/bitmap) that gives page hotness.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pimcloud {

// One line of numa_maps: "7f0000000000 default anon=12 dirty=12 N1=8 N2=4 kernelpagesize_kB=4"
struct NumaMapsEntry {
  std::uintptr_t start = 0;
  std::string policy;
  std::map<int, std::uint64_t> pagesPerNode;
  bool anon = false;
  std::string file;
  std::uint64_t pageBytes = 4096;
};
std::vector<NumaMapsEntry> parseNumaMaps(const std::string& text);
// Bytes of the process on each node (sum over mappings).
std::map<int, std::uint64_t> bytesPerNode(const std::vector<NumaMapsEntry>& entries);

// One line of maps: "00010000-00018000 rw-p 00000000 00:00 0   [heap]"
struct Vma {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  std::string perms;
  std::uint64_t inode = 0;
  std::string path;
  // Private, writable, not file-backed: where a thread's private data lives.
  bool privateAnon() const;
};
std::vector<Vma> parseMaps(const std::string& text);

// A pagemap entry (64 bits, see Documentation/admin-guide/mm/pagemap.rst).
struct PagemapEntry {
  bool present = false;
  bool swapped = false;
  bool fileOrSharedAnon = false;
  bool exclusive = false;
  std::uint64_t pfn = 0;  // zero without CAP_SYS_ADMIN
};
PagemapEntry decodePagemap(std::uint64_t raw);

// Reads the entries for [start, end) from a pagemap file; empty on error.
std::vector<PagemapEntry> readPagemap(const std::string& path, std::uintptr_t start,
                                      std::uintptr_t end, std::size_t pageBytes = 4096);

// /proc/kpageflags: a 64-bit word of flags per PFN (Documentation/admin-guide/mm/
// pagemap.rst). The LRU bits tell where the kernel's reclaim keeps a page.
inline constexpr int kKpfLru = 5;
inline constexpr int kKpfActive = 6;
inline constexpr int kKpfUnevictable = 18;
// On an LRU list, neither active nor unevictable: the next to be reclaimed (HeteroOS-LRU
// evicts such pages from fast memory).
bool lruInactive(std::uint64_t flags);
// lruInactive for each PFN (false for PFN 0, which pagemap gives without CAP_SYS_ADMIN);
// nullopt when the file cannot be read.
std::optional<std::vector<bool>> readLruInactive(const std::string& kpageflagsPath,
                                                 const std::vector<std::uint64_t>& pfns);

// The idle page bitmap: one bit per PFN, read and written in 8-byte words.
class IdleBitmap {
 public:
  explicit IdleBitmap(std::string path) : path_(std::move(path)) {}
  bool available() const;
  // Idle bits of the given PFNs (true = not accessed since marked); nullopt on error.
  std::optional<std::vector<bool>> idle(const std::vector<std::uint64_t>& pfns) const;
  // Marks the PFNs idle; returns false on error.
  bool markIdle(const std::vector<std::uint64_t>& pfns) const;

 private:
  std::string path_;
};

}  // namespace pimcloud
