#include "store/call_gate.h"

namespace fpstore::internal {

namespace {

// The calling thread's innermost ticket, of any gate; the others through Ticket::outer_. A plain
// pointer: nothing to destroy when the thread or the process exits.
thread_local CallGate::Ticket* t_innermost = nullptr;

}  // namespace

CallGate::Ticket::Ticket(CallGate& gate, bool nested)
    : gate_(gate), nested_(nested), outer_(t_innermost) {
  t_innermost = this;
}

CallGate::Ticket::~Ticket() {
  t_innermost = outer_;  // tickets are locals of nested calls: the last taken goes first
  gate_.Leave();
}

CallGate::Ticket CallGate::Enter() {
  for (const Ticket* t = t_innermost; t != nullptr; t = t->outer_) {
    if (&t->gate_ == this) {
      // Inside already: the outer call holds the count above zero, so Hold cannot have succeeded.
      in_flight_.fetch_add(1);
      return Ticket(*this, /*nested=*/true);
    }
  }
  WaitAndEnter();
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
    Leave();
    MutexLock lock(mu_);
    while (held_.load()) changed_.Wait(mu_);
  }
}

void CallGate::Leave() {
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
