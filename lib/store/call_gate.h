// Counts the calls in flight on one store handle, so that what the calls use can be replaced while
// none runs (reopening_store.h). Entering costs two atomic operations in the usual case, when the
// gate is not held.
//
// A call made from inside another call on the same gate by the same thread (a scan's sink that
// inserts) enters at once even while the gate is held: its outer call keeps the count above zero,
// so nothing is replaced under it, and waiting would deadlock.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_STORE_CALL_GATE_H_
#define FPSTORE_LIB_STORE_CALL_GATE_H_

#include <atomic>
#include <chrono>

#include "util/mutex.h"

namespace fpstore::internal {

class CallGate {
 public:
  // One call's place inside the gate, on the thread that took it, given back on destruction.
  // Neither copied nor moved: a thread's tickets, of any gates, form a stack on that thread's
  // stack, innermost first, so that a thread finds the gates it is inside without any
  // thread-local state that thread or process exit destroys (a store destroyed by a static or
  // thread-local destructor still enters its gate to close).
  class Ticket {
   public:
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();
    // Whether this thread was inside the gate already when it took the ticket.
    bool nested() const { return nested_; }

   private:
    friend class CallGate;
    Ticket(CallGate& gate, bool nested);
    CallGate& gate_;
    const bool nested_;
    Ticket* const outer_;  // the thread's innermost ticket before this one; null if none
  };
  // A bulk loader's place, which lives beyond the call that takes it and may end on any thread.
  class LoaderTicket {
   public:
    LoaderTicket(LoaderTicket&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    LoaderTicket& operator=(LoaderTicket&&) = delete;
    ~LoaderTicket() {
      if (gate_ != nullptr) gate_->Leave();
    }

   private:
    friend class CallGate;
    explicit LoaderTicket(CallGate* gate) : gate_(gate) {}
    CallGate* gate_;
  };

  // A call's ticket: waits while the gate is held, unless this thread is inside already.
  Ticket Enter();
  LoaderTicket EnterForLoader();

  // Holds back new calls and waits up to `timeout` for those in flight to leave. True if none is
  // left: the caller then has the gate to itself until Release. False: the gate is released
  // again. REQUIRES: the caller holds no ticket of this gate.
  bool Hold(std::chrono::milliseconds timeout) EXCLUDES(mu_);
  void Release() EXCLUDES(mu_);

 private:
  // Waits while the gate is held, then counts a call in. REQUIRES: the thread is not inside.
  void WaitAndEnter() EXCLUDES(mu_);
  void Leave() EXCLUDES(mu_);

  std::atomic<int> in_flight_{0};
  std::atomic<bool> held_{false};
  Mutex mu_;
  CondVar changed_;  // in_flight_ or held_ changed while someone waits
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_CALL_GATE_H_
