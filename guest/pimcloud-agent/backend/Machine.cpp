#include "backend/Machine.h"

namespace pimcloud {

std::string MoveResult::why(int node) const {
  std::string out;
  auto say = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (status.gone) say("process gone (ESRCH)");
  if (targetFull) say("stack " + std::to_string(node) + " full (ENOMEM from the kernel)");
  if (busy > 0) say(std::to_string(busy) + " pages busy (EBUSY), left in place");
  if (!status.ok && !status.gone) say(status.error);
  return out;
}

}  // namespace pimcloud
