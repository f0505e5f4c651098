#include "platform/freed_memory.h"

#include <malloc.h>

namespace fpstore::internal {

FreedMemoryReturn::~FreedMemoryReturn() {
#ifdef __GLIBC__
  if (enabled_) malloc_trim(0);
#endif
}

}  // namespace fpstore::internal
