#include "backend/ProcMaps.h"

#include <fcntl.h>
#include <unistd.h>

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

std::optional<std::vector<bool>> IdleBitmap::idle(const std::vector<std::uint64_t>& pfns) const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<bool> out;
  out.reserve(pfns.size());
  std::uint64_t cachedWord = ~0ULL, cached = 0;
  for (std::uint64_t pfn : pfns) {
    const std::uint64_t word = pfn / 64;
    if (word != cachedWord) {
      if (::pread(fd, &cached, 8, static_cast<off_t>(word * 8)) != 8) {
        ::close(fd);
        return std::nullopt;
      }
      cachedWord = word;
    }
    out.push_back((cached >> (pfn % 64)) & 1);
  }
  ::close(fd);
  return out;
}

bool IdleBitmap::markIdle(const std::vector<std::uint64_t>& pfns) const {
  // Writes whole words: bits set to 1 mark pages idle, 0 bits leave pages unchanged.
  std::map<std::uint64_t, std::uint64_t> words;
  for (std::uint64_t pfn : pfns) words[pfn / 64] |= 1ULL << (pfn % 64);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = true;
  for (const auto& [word, bits] : words) {
    ok = ::pwrite(fd, &bits, 8, static_cast<off_t>(word * 8)) == 8 && ok;
  }
  ::close(fd);
  return ok;
}

}  // namespace pimcloud
