// pimcloud-hw: the hardware counters from the command line (guest/driver).
//   pimcloud-hw info | cpus | hottest N NODE | throttle CPU LEVEL | decay PS | whois PFN
//   pimcloud-hw self-test   map a page, find its frame in /proc/self/pagemap and check
//                           that the driver's reverse map names this process and page
//   pimcloud-hw hotset [--nodes 1,2] [--pages 200] [--cold 2000] [--rounds 100]
//                      [--host-cpu 0] [--pim-cpu C] [--min-precision 0.9] [--frames FILE]
//                           the counters' acceptance test (tools/HotSet.h); --frames
//                           writes "node index kind pfn" per page of the sets
// Prints the driver's answer; exits 1 on an "error:" answer or a failed self-test.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "backend/HwCounters.h"
#include "backend/Sysfs.h"
#include "tools/HotSet.h"

namespace {

int selfTest(const pimcloud::HwCounters& hw) {
  const std::size_t size = static_cast<std::size_t>(::getpagesize());
  void* page = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    std::cerr << "self-test: mmap failed\n";
    return 1;
  }
  std::memset(page, 0x5a, size);
  const std::uint64_t pfn = pimcloud::frameOf(page);
  if (pfn == 0) {
    std::cerr << "self-test: /proc/self/pagemap gave no frame (run as root)\n";
    return 1;
  }
  std::ostringstream command;
  command << "whois " << pfn;
  const std::string answer = hw.ask(command.str());
  std::istringstream fields(answer);
  std::string pfnText, pidText, vaddrText;
  fields >> pfnText >> pidText >> vaddrText;
  const long pid = std::strtol(pidText.c_str(), nullptr, 10);
  const auto vaddr = std::strtoull(vaddrText.c_str(), nullptr, 16);
  const bool ok = pid == ::getpid() && vaddr == reinterpret_cast<std::uintptr_t>(page);
  std::printf("self-test: page %p frame %#" PRIx64 ": driver says pid %s vaddr %s: %s\n", page,
              pfn, pidText.c_str(), vaddrText.c_str(), ok ? "ok" : "MISMATCH");
  ::munmap(page, size);
  return ok ? 0 : 1;
}

int hotSet(int argc, char** argv) {
  pimcloud::HotSetOptions o;
  double minPrecision = 0.9;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    try {
      if (flag == "--nodes") {
        const auto nodes = pimcloud::parseCpuList(value);
        if (!nodes || nodes->empty()) throw std::invalid_argument(value);
        o.nodes = *nodes;
      } else if (flag == "--pages") o.hotPages = std::stoi(value);
      else if (flag == "--cold") o.coldPages = std::stoi(value);
      else if (flag == "--rounds") o.rounds = std::stoi(value);
      else if (flag == "--host-cpu") o.hostCpu = std::stoi(value);
      else if (flag == "--pim-cpu") o.pimCpu = std::stoi(value);
      else if (flag == "--min-precision") minPrecision = std::stod(value);
      else if (flag == "--frames") o.framesFile = value;
      else throw std::invalid_argument("unknown option");
    } catch (const std::exception&) {
      std::cerr << "pimcloud-hw hotset: bad " << flag << " " << value << "\n";
      return 2;
    }
  }
  return pimcloud::runHotSet(o, minPrecision);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: pimcloud-hw info | cpus | hottest N NODE | throttle CPU LEVEL | "
                 "decay PS | whois PFN | self-test\n";
    return 2;
  }
  const std::string verb = argv[1];
  // whois and self-test need only the driver, not the device: they work in QEMU too.
  std::string error;
  if (verb != "whois" && verb != "self-test" && !pimcloud::HwCounters::open(error)) {
    std::cerr << "pimcloud-hw: " << error << "\n";
    return 1;
  }
  const auto hw = pimcloud::HwCounters::driver();
  if (verb == "self-test") return selfTest(hw);
  if (verb == "hotset") return hotSet(argc, argv);
  std::string command = verb;
  for (int i = 2; i < argc; ++i) command += std::string(" ") + argv[i];
  const std::string answer = hw.ask(command);
  std::cout << answer;
  return answer.rfind("error:", 0) == 0 ? 1 : 0;
}
