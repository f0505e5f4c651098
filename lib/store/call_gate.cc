#include "store/call_gate.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace fpstore::internal {

namespace {

// The gates the calling thread is inside, each with how many of its calls: a short list, as calls
// nest only through sinks.
thread_local std::vector<std::pair<const CallGate*, int>> t_inside;

}  // namespace

int& CallGate::Depth() {
  for (auto& [gate, depth] : t_inside) {
    if (gate == this) return depth;
  }
  return t_inside.emplace_back(this, 0).second;
}

CallGate::Ticket CallGate::Enter() {
  int& depth = Depth();
  if (depth > 0) {
    // Inside already: the outer call holds the count above zero, so Hold cannot have succeeded.
    in_flight_.fetch_add(1);
    ++depth;
    return Ticket(*this, /*nested=*/true);
  }
  WaitAndEnter();
  ++Depth();
  return Ticket(*this, /*nested=*/false);
}

CallGate::LoaderTicket CallGate::EnterForLoader() {
  WaitAndEnter();
  return LoaderTicket(this);
}

void CallGate::WaitAndEnter() {
  while (true) {
    // Sequentially consistent, as Hold's store of held_ then load of in_flight_: one of the two
    // sides sees the other.
    in_flight_.fetch_add(1);
    if (!held_.load()) return;
    Leave(false);
    MutexLock lock(mu_);
    while (held_.load()) changed_.Wait(mu_);
  }
}

void CallGate::Leave(bool thread) {
  if (thread) {
    int& depth = Depth();
    if (--depth == 0) {
      std::erase_if(t_inside, [this](const auto& entry) { return entry.first == this; });
    }
  }
  if (in_flight_.fetch_sub(1) == 1 && held_.load()) {
    MutexLock lock(mu_);
    changed_.NotifyAll();
  }
}

bool CallGate::Hold(std::chrono::milliseconds timeout) {
  held_.store(true);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  while (in_flight_.load() != 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    changed_.WaitFor(mu_, deadline - now);
  }
  if (in_flight_.load() == 0) return true;
  held_.store(false);
  changed_.NotifyAll();
  return false;
}

void CallGate::Release() {
  held_.store(false);
  MutexLock lock(mu_);
  changed_.NotifyAll();
}

}  // namespace fpstore::internal
