#include "fpstore/version.h"

namespace fpstore {

// Compiled into the library, so it reports the library's version even to a
// program built against other headers.
std::string_view Version() { return FPSTORE_VERSION_STRING; }

}  // namespace fpstore
