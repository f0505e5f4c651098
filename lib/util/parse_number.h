// Whole-text number parsing: how metadata values, option texts and Redis replies are read.

#ifndef FPSTORE_LIB_UTIL_PARSE_NUMBER_H_
#define FPSTORE_LIB_UTIL_PARSE_NUMBER_H_

#include <charconv>
#include <string_view>
#include <system_error>

namespace fpstore::internal {

// Whether the whole of `text` is a number of T (std::from_chars), put in `out`.
template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_PARSE_NUMBER_H_
