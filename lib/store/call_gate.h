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
  // One call's, or a bulk loader's, place inside the gate, given back on destruction.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept
        : gate_(other.gate_), thread_(other.thread_), nested_(other.nested_) {
      other.gate_ = nullptr;
    }
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket() {
      if (gate_ != nullptr) gate_->Leave(thread_);
    }
    // Whether this thread was inside the gate already when it took the ticket.
    bool nested() const { return nested_; }

   private:
    friend class CallGate;
    Ticket(CallGate* gate, bool thread, bool nested)
        : gate_(gate), thread_(thread), nested_(nested) {}
    CallGate* gate_ = nullptr;
    bool thread_ = false;  // counted among the thread's calls (not a loader's ticket)
    bool nested_ = false;
  };

  // A call's ticket: waits while the gate is held, unless this thread is inside already.
  Ticket Enter() { return Take(/*thread=*/true); }
  // A ticket that lives beyond the call that takes it, on any thread (a bulk loader's).
  Ticket EnterForLoader() { return Take(/*thread=*/false); }

  // Holds back new calls and waits up to `timeout` for those in flight to leave. True if none is
  // left: the caller then has the gate to itself until Release. False: the gate is released
  // again. REQUIRES: the caller holds no ticket of this gate.
  bool Hold(std::chrono::milliseconds timeout) EXCLUDES(mu_);
  void Release() EXCLUDES(mu_);

 private:
  Ticket Take(bool thread) EXCLUDES(mu_);
  void Leave(bool thread) EXCLUDES(mu_);
  // How many calls of this gate the calling thread is inside.
  int& Depth();

  std::atomic<int> in_flight_{0};
  std::atomic<bool> held_{false};
  Mutex mu_;
  CondVar changed_;  // in_flight_ or held_ changed while someone waits
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_CALL_GATE_H_
