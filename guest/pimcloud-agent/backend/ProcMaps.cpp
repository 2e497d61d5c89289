#include "backend/ProcMaps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace pimcloud {

std::vector<NumaMapsEntry> parseNumaMaps(const std::string& text) {
  std::vector<NumaMapsEntry> out;
  std::stringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    std::stringstream l(line);
    std::string addr;
    NumaMapsEntry e;
    if (!(l >> addr >> e.policy)) continue;
    try {
      e.start = static_cast<std::uintptr_t>(std::stoull(addr, nullptr, 16));
    } catch (...) {
      continue;
    }
    std::string tok;
    while (l >> tok) {
      const auto eq = tok.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = tok.substr(0, eq), value = tok.substr(eq + 1);
      try {
        if (key.size() > 1 && key[0] == 'N' && std::isdigit(static_cast<unsigned char>(key[1]))) {
          e.pagesPerNode[std::stoi(key.substr(1))] = std::stoull(value);
        } else if (key == "anon") {
          e.anon = true;
        } else if (key == "file") {
          e.file = value;
        } else if (key == "kernelpagesize_kB") {
          e.pageBytes = std::stoull(value) * 1024;
        }
      } catch (...) {
        // A field we cannot read is skipped, not fatal.
      }
    }
    out.push_back(e);
  }
  return out;
}

std::map<int, std::uint64_t> bytesPerNode(const std::vector<NumaMapsEntry>& entries) {
  std::map<int, std::uint64_t> out;
  for (const NumaMapsEntry& e : entries) {
    for (const auto& [node, pages] : e.pagesPerNode) out[node] += pages * e.pageBytes;
  }
  return out;
}

bool Vma::privateAnon() const {
  if (perms.size() < 4 || perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p') return false;
  if (inode != 0) return false;
  return path.empty() || path == "[heap]" || path == "[stack]" || path.rfind("[anon", 0) == 0;
}

std::vector<Vma> parseMaps(const std::string& text) {
  std::vector<Vma> out;
  std::stringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    std::stringstream l(line);
    std::string range, offset, dev;
    Vma v;
    if (!(l >> range >> v.perms >> offset >> dev >> v.inode)) continue;
    const auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    try {
      v.start = static_cast<std::uintptr_t>(std::stoull(range.substr(0, dash), nullptr, 16));
      v.end = static_cast<std::uintptr_t>(std::stoull(range.substr(dash + 1), nullptr, 16));
    } catch (...) {
      continue;
    }
    std::getline(l, v.path);
    const auto first = v.path.find_first_not_of(' ');
    v.path = first == std::string::npos ? "" : v.path.substr(first);
    out.push_back(v);
  }
  return out;
}

PagemapEntry decodePagemap(std::uint64_t raw) {
  PagemapEntry e;
  e.present = (raw >> 63) & 1;
  e.swapped = (raw >> 62) & 1;
  e.fileOrSharedAnon = (raw >> 61) & 1;
  e.exclusive = (raw >> 56) & 1;
  e.pfn = e.present ? raw & ((1ULL << 55) - 1) : 0;
  return e;
}

std::vector<PagemapEntry> readPagemap(const std::string& path, std::uintptr_t start,
                                      std::uintptr_t end, std::size_t pageBytes) {
  std::vector<PagemapEntry> out;
  if (end <= start || pageBytes == 0) return out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  const std::size_t n = (end - start) / pageBytes;
  std::vector<std::uint64_t> raw(n);
  const off_t off = static_cast<off_t>(start / pageBytes * 8);
  const ssize_t got = ::pread(fd, raw.data(), n * 8, off);
  ::close(fd);
  if (got < 0) return out;
  const std::size_t entries = static_cast<std::size_t>(got) / 8;
  out.reserve(entries);
  for (std::size_t i = 0; i < entries; ++i) out.push_back(decodePagemap(raw[i]));
  return out;
}

bool IdleBitmap::available() const { return ::access(path_.c_str(), R_OK | W_OK) == 0; }

namespace {

// Words grouped into runs read or written with one system call each (gaps of up to 64
// words are bridged: bits of 0 written to the bitmap leave those pages unchanged).
std::vector<std::pair<std::uint64_t, std::uint64_t>> wordRuns(std::vector<std::uint64_t> words) {
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;  // first word, count
  for (std::uint64_t w : words) {
    if (!runs.empty() && w - (runs.back().first + runs.back().second) <= 64) {
      runs.back().second = w - runs.back().first + 1;
    } else {
      runs.push_back({w, 1});
    }
  }
  return runs;
}

}  // namespace

// 8-byte words of a file (the idle bitmap, kpageflags) at these indices, a run per read.
std::optional<std::map<std::uint64_t, std::uint64_t>> readWords(const std::string& path,
                                                                const std::vector<std::uint64_t>& indices) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::map<std::uint64_t, std::uint64_t> words;
  for (const auto& [first, count] : wordRuns(indices)) {
    std::vector<std::uint64_t> buf(count);
    const ssize_t want = static_cast<ssize_t>(count * 8);
    if (::pread(fd, buf.data(), static_cast<std::size_t>(want), static_cast<off_t>(first * 8)) != want) {
      ::close(fd);
      return std::nullopt;
    }
    for (std::uint64_t i = 0; i < count; ++i) words[first + i] = buf[i];
  }
  ::close(fd);
  return words;
}

std::optional<std::vector<bool>> IdleBitmap::idle(const std::vector<std::uint64_t>& pfns) const {
  std::vector<std::uint64_t> indices;
  indices.reserve(pfns.size());
  for (std::uint64_t pfn : pfns) indices.push_back(pfn / 64);
  auto bits = readWords(path_, indices);
  if (!bits) return std::nullopt;
  std::vector<bool> out;
  out.reserve(pfns.size());
  for (std::uint64_t pfn : pfns) out.push_back(((*bits)[pfn / 64] >> (pfn % 64)) & 1);
  return out;
}

bool lruInactive(std::uint64_t flags) {
  return (flags >> kKpfLru & 1) && !(flags >> kKpfActive & 1) && !(flags >> kKpfUnevictable & 1);
}

std::optional<std::vector<bool>> readLruInactive(const std::string& kpageflagsPath,
                                                 const std::vector<std::uint64_t>& pfns) {
  auto flags = readWords(kpageflagsPath, pfns);
  if (!flags) return std::nullopt;
  std::vector<bool> out;
  out.reserve(pfns.size());
  for (std::uint64_t pfn : pfns) out.push_back(pfn != 0 && lruInactive((*flags)[pfn]));
  return out;
}

bool IdleBitmap::markIdle(const std::vector<std::uint64_t>& pfns) const {
  // Bits set to 1 mark pages idle; 0 bits leave pages unchanged.
  std::map<std::uint64_t, std::uint64_t> words;
  for (std::uint64_t pfn : pfns) words[pfn / 64] |= 1ULL << (pfn % 64);
  std::vector<std::uint64_t> keys;
  for (const auto& [w, b] : words) keys.push_back(w);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = true;
  for (const auto& [first, count] : wordRuns(keys)) {
    std::vector<std::uint64_t> buf(count, 0);
    for (std::uint64_t i = 0; i < count; ++i) {
      auto it = words.find(first + i);
      if (it != words.end()) buf[i] = it->second;
    }
    const ssize_t n = static_cast<ssize_t>(count * 8);
    ok = ::pwrite(fd, buf.data(), static_cast<std::size_t>(n), static_cast<off_t>(first * 8)) == n && ok;
  }
  ::close(fd);
  return ok;
}

}  // namespace pimcloud
