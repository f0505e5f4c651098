#include "format/groups.h"

#include <bit>
#include <cstring>
#include <iterator>
#include <span>
#include <type_traits>

#include "plan/table_entry.h"

namespace fpstore::internal {

// Fewer keys make files and compactions cheaper (RocksDB's work is per key),
// larger groups each read and decoded dearer.
int GroupBitsFor(std::uint64_t expected_documents) {
  constexpr std::uint64_t kMaxMembers = 256;
  int bits = 8;
  while (bits < kMaxGroupBits && expected_documents > (kMaxMembers << bits)) ++bits;
  return bits;
}

namespace {

Word BitsOf(Word member) { return member; }
Word BitsOf(const IdMember& member) { return member.bits; }
Word BitsOf(Head member) { return Word(member); }
Word BitsOf(const NarrowIdMember& member) { return Word(member.bits); }

template <typename Member>
constexpr bool kHasId = std::is_same_v<Member, IdMember> || std::is_same_v<Member, NarrowIdMember>;

template <typename Member>
constexpr bool kNarrow = std::is_same_v<Member, Head> || std::is_same_v<Member, NarrowIdMember>;

// A member's head bits.
template <typename Member>
Head HeadBits(const GroupLayout& layout, const Member& member) {
  if constexpr (std::is_same_v<Member, Head>) {
    return member;
  } else if constexpr (std::is_same_v<Member, NarrowIdMember>) {
    return member.bits;
  } else {
    return layout.HeadOf(BitsOf(member));
  }
}

// A member of `head` bits, with `tail` and `id` where the member type keeps them.
template <typename Member>
Member MakeMember(const GroupLayout& layout, Head head, std::uint64_t tail, DocumentId id) {
  if constexpr (std::is_same_v<Member, Head>) {
    return head;
  } else if constexpr (std::is_same_v<Member, NarrowIdMember>) {
    return {head, id};
  } else if constexpr (std::is_same_v<Member, IdMember>) {
    return {layout.WordOf(head, tail), id};
  } else {
    return layout.WordOf(head, tail);
  }
}

// The member head bits at `at`, as one 8-byte load where `end` leaves room:
// folds and decodes read every member, and bytewise loads would dominate them.
Head LoadHead(const GroupLayout& layout, const char* at, const char* end) {
  const std::size_t width = layout.bits_bytes();  // 1 to 7 (GroupLayout): no shift by 64
  if (end - at < 8) return GetBigEndianBytes(at, width);
  std::uint64_t word;
  std::memcpy(&word, at, 8);
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  return word >> (64 - 8 * width);
}

template <typename Member>
Member LoadMember(const GroupLayout& layout, const char* at, const char* end) {
  const bool tail = !kNarrow<Member> && layout.keeps_tails();
  return MakeMember<Member>(layout, LoadHead(layout, at, end),
                            tail ? GetBigEndian64(at + layout.bits_bytes()) : 0,
                            kHasId<Member> ? GetBigEndian64(at + layout.member_bytes() - 8) : 0);
}

// Writes `member`'s head bits as a whole 8-byte word: the caller leaves room past it.
template <typename Member>
void StoreMember(const GroupLayout& layout, const Member& member, char* out) {
  std::uint64_t word = HeadBits(layout, member) << (64 - 8 * layout.bits_bytes());
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  std::memcpy(out, &word, 8);
  if constexpr (!kNarrow<Member>) {
    if (layout.keeps_tails()) PutBigEndian64(out + layout.bits_bytes(), BitsOf(member).low());
  }
  if constexpr (kHasId<Member>) {
    PutBigEndian64(out + layout.member_bytes() - 8, member.id);
  }
}

template <typename Member>
void AppendMembers(const GroupLayout& layout, std::span<const Member> members, std::string& out) {
  const std::size_t width = layout.member_bytes();
  std::size_t at = out.size();
  // A word's slack past the last member for StoreMember, cut after.
  out.resize(at + members.size() * width + 8);
  for (const Member& m : members) {
    StoreMember(layout, m, out.data() + at);
    at += width;
  }
  out.resize(at);
}

}  // namespace

namespace {

// False unless `bytes` holds whole, ascending members in the operand layout.
template <typename Member>
bool DecodeOperandMembers(const GroupLayout& layout, std::string_view bytes,
                          std::vector<Member>& members) {
  const std::size_t width = layout.member_bytes();
  if (bytes.size() % width != 0) return false;
  members.clear();
  members.reserve(bytes.size() / width);
  const char* const end = bytes.data() + bytes.size();
  for (const char* at = bytes.data(); at != end; at += width) {
    const Member m = LoadMember<Member>(layout, at, end);
    if (layout.MemberBits(BitsOf(m)) != BitsOf(m)) return false;  // pad bits must be zero
    if (!members.empty() && members.back() >= m) return false;
    members.push_back(m);
  }
  return true;
}

// ---- The Elias-Fano code of a group's member bits ----
//
// c members of w bits, ascending and distinct: each keeps its low L =
// floor(log2(2^w / c)) bits as they are, packed; its high bits h_i = x_i >> L
// are a set bit at h_i + i of a bit array of c + h_max bits. Bits are
// numbered from the least significant of the first byte.

// L for `count` members of `width` bits. REQUIRES: width <= 63.
int LowBitsFor(std::size_t count, int width) {
  if (count <= 1) return width;
  const int ceil_log2 = 64 - std::countl_zero(static_cast<std::uint64_t>(count - 1));
  return std::max(0, width - ceil_log2);
}

// Two words: a member's low bits, shifted within their first byte, span up to 9 bytes.
__extension__ typedef unsigned __int128 Word128;

std::uint64_t LowMask(int bits) { return bits == 0 ? 0 : ~std::uint64_t{0} >> (64 - bits); }

// The `bits` bits of `p` (`size` bytes) at bit `at`. REQUIRES: they lie within it.
std::uint64_t GetBits(const unsigned char* p, std::size_t size, std::size_t at, int bits) {
  const std::size_t first = at / 8;
  const int shift = static_cast<int>(at % 8);
  if constexpr (std::endian::native == std::endian::little) {
    if (first + 16 <= size) {
      Word128 word;
      std::memcpy(&word, p + first, 16);
      return static_cast<std::uint64_t>(word >> shift) & LowMask(bits);
    }
  }
  Word128 word = 0;
  for (int k = 0; k < bits + shift; k += 8) {
    word |= static_cast<Word128>(p[first + k / 8]) << k;
  }
  return static_cast<std::uint64_t>(word >> shift) & LowMask(bits);
}

void PutVarint(std::string& out, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
}

// The shortest form only, so that a group has one value.
bool GetVarint(std::string_view& in, std::uint64_t* v) {
  std::uint64_t result = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      if (byte == 0 && shift > 0) return false;
      *v = result;
      return true;
    }
  }
  return false;
}

// Appends the code of `count` members whose bits bits_of(i) gives.
template <typename BitsOfMember>
void AppendEliasFano(std::size_t count, int width, BitsOfMember&& bits_of, std::string& out) {
  const int low = LowBitsFor(count, width);
  const std::uint64_t mask = LowMask(low);
  const std::size_t low_bytes = (count * static_cast<std::size_t>(low) + 7) / 8;
  const std::size_t high_bits = count + static_cast<std::size_t>(bits_of(count - 1) >> low);
  const std::size_t start = out.size();
  out.resize(start + low_bytes + (high_bits + 7) / 8, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data() + start);
  // The low parts through a word in a register, written out 8 bytes at a
  // time: no store waits on the one before.
  const auto put = [](unsigned char* at, std::uint64_t word, std::size_t bytes) {
    for (std::size_t k = 0; k < bytes; ++k) at[k] = static_cast<unsigned char>(word >> (8 * k));
  };
  if (low > 0) {
    std::uint64_t word = 0;
    int used = 0;
    unsigned char* at = p;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t v = bits_of(i) & mask;
      word |= v << used;
      used += low;
      if (used >= 64) {
        put(at, word, 8);
        at += 8;
        used -= 64;
        word = used == 0 ? 0 : v >> (low - used);
      }
    }
    put(at, word, static_cast<std::size_t>(used + 7) / 8);
  }
  unsigned char* high = p + low_bytes;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = static_cast<std::size_t>(bits_of(i) >> low) + i;
    high[at / 8] |= static_cast<unsigned char>(1u << (at % 8));
  }
}

// Decodes `count` members of `width` bits from `code`, the rest of a value,
// calling emit(i, bits) in order; false unless the code is exactly that: its
// high array holds `count` set bits and ends in the byte of the last, every
// member is below 2^width, and the members ascend: where two have the same
// bits, after(i) must say member i comes after member i - 1 by what else it
// has (its tail, its id).
template <typename After, typename Emit>
bool DecodeEliasFano(std::string_view code, std::size_t count, int width, After&& after,
                     Emit&& emit) {
  const int low = LowBitsFor(count, width);
  const std::size_t low_bytes = (count * static_cast<std::size_t>(low) + 7) / 8;
  if (code.size() <= low_bytes) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(code.data());
  const std::size_t low_tail = (count * static_cast<std::size_t>(low)) % 8;
  if (low_tail != 0 && (p[low_bytes - 1] >> low_tail) != 0) return false;  // padding set
  const auto* high = p + low_bytes;
  const std::size_t high_bytes = code.size() - low_bytes;
  if (high[high_bytes - 1] == 0) return false;
  const std::uint64_t high_limit = std::uint64_t{1} << (width - low);  // width - low <= 63
  std::size_t i = 0;
  Head previous = 0;
  for (std::size_t byte = 0; byte < high_bytes; byte += 8) {
    std::uint64_t word = 0;
    const std::size_t n = std::min<std::size_t>(8, high_bytes - byte);
    for (std::size_t k = 0; k < n; ++k) word |= std::uint64_t{high[byte + k]} << (8 * k);
    while (word != 0) {
      if (i == count) return false;
      const std::size_t at = byte * 8 + static_cast<std::size_t>(std::countr_zero(word));
      word &= word - 1;
      const std::uint64_t h = at - i;
      if (h >= high_limit) return false;
      const Head bits =
          (h << low) |
          (low > 0 ? GetBits(p, code.size(), i * static_cast<std::size_t>(low), low) : 0);
      if (i > 0 && (bits < previous || (bits == previous && !after(i)))) return false;
      previous = bits;
      emit(i, bits);
      ++i;
    }
  }
  return i == count;
}

// The start of a value: its count, and where kept, its ids and tails (null
// where not kept); `value` is left at the code.
struct ValueStart {
  std::size_t count = 0;
  const char* ids = nullptr;
  const char* tails = nullptr;

  std::uint64_t id(std::size_t i) const { return GetBigEndian64(ids + 8 * i); }
  std::uint64_t tail(std::size_t i) const { return GetBigEndian64(tails + 8 * i); }
  // Whether member i comes after member i - 1, their head bits the same.
  bool After(std::size_t i) const {
    if (tails != nullptr && tail(i) != tail(i - 1)) return tail(i) > tail(i - 1);
    return ids != nullptr && id(i) > id(i - 1);
  }
};

bool DecodeValueStart(const GroupLayout& layout, std::string_view& value, ValueStart* start) {
  std::uint64_t c = 0;
  if (!GetVarint(value, &c) || c == 0) return false;
  const std::size_t fixed_bytes = (layout.keeps_ids() ? 8 : 0) + (layout.keeps_tails() ? 8 : 0);
  // Each member has its id and tail and a bit of the high array: no count larger is read.
  if (c > value.size() * 8 || (fixed_bytes != 0 && c > value.size() / fixed_bytes)) return false;
  start->count = static_cast<std::size_t>(c);
  if (layout.keeps_ids()) {
    start->ids = value.data();
    value.remove_prefix(c * 8);
  }
  if (layout.keeps_tails()) {
    start->tails = value.data();
    value.remove_prefix(c * 8);
  }
  return true;
}

}  // namespace

template <typename Member>
void EncodeGroupValue(const GroupLayout& layout, const std::vector<Member>& members,
                      std::string& out) {
  out.clear();
  if (members.empty()) return;  // a group without members is an empty value
  PutVarint(out, members.size());
  if constexpr (kHasId<Member>) {
    const std::size_t start = out.size();
    out.resize(start + 8 * members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      PutBigEndian64(out.data() + start + 8 * i, members[i].id);
    }
  }
  if (!kNarrow<Member> && layout.keeps_tails()) {
    const std::size_t start = out.size();
    out.resize(start + 8 * members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      PutBigEndian64(out.data() + start + 8 * i, BitsOf(members[i]).low());
    }
  }
  AppendEliasFano(
      members.size(), layout.member_bits(),
      [&](std::size_t i) { return HeadBits(layout, members[i]); }, out);
}

template <typename Member>
bool DecodeGroupValue(const GroupLayout& layout, std::string_view value,
                      std::vector<Member>& members) {
  members.clear();
  if (value.empty()) return true;
  ValueStart start;
  if (!DecodeValueStart(layout, value, &start)) return false;
  if constexpr (kHasId<Member>) {
    if (!layout.keeps_ids()) return false;
  }
  members.resize(start.count);
  return DecodeEliasFano(
      value, start.count, layout.member_bits(), [&](std::size_t i) { return start.After(i); },
      [&](std::size_t i, Head head) {
        const bool tail = !kNarrow<Member> && start.tails != nullptr;
        members[i] = MakeMember<Member>(layout, head, tail ? start.tail(i) : 0,
                                        kHasId<Member> ? start.id(i) : 0);
      });
}

bool GroupValue::DecodeRange(const GroupLayout& layout, std::string_view value, Head lo, Head hi) {
  heads_.clear();
  ids_ = nullptr;
  tails_ = nullptr;
  if (value.empty()) return true;
  ValueStart start;
  if (!DecodeValueStart(layout, value, &start)) return false;
  const std::size_t count = start.count;
  const int low = LowBitsFor(count, layout.member_bits());
  const std::size_t low_bytes = (count * static_cast<std::size_t>(low) + 7) / 8;
  if (value.size() <= low_bytes) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  const unsigned char* high = p + low_bytes;
  const std::size_t high_bits = 8 * (value.size() - low_bytes);
  const std::size_t high_size = value.size() - low_bytes;
  const auto word_at = [&](std::size_t bit) {  // the 64 bits from `bit` on, zero past the end
    const std::size_t first = bit / 8;
    Word128 word = 0;
    for (std::size_t k = 0; k < 9 && first + k < high_size; ++k) {
      word |= static_cast<Word128>(high[first + k]) << (8 * k);
    }
    return static_cast<std::uint64_t>(word >> (bit % 8));
  };
  // Bucket h_lo starts just past the h_lo-th zero of the high array.
  const std::uint64_t h_lo = lo >> low, h_hi = hi >> low;
  std::size_t pos = 0;
  for (std::uint64_t zeros = h_lo; zeros > 0;) {
    if (pos >= high_bits) return true;  // past every member
    const std::size_t valid = std::min<std::size_t>(64, high_bits - pos);
    std::uint64_t empty = ~word_at(pos) & LowMask(static_cast<int>(valid));
    const auto here = static_cast<std::uint64_t>(std::popcount(empty));
    if (here < zeros) {
      zeros -= here;
      pos += valid;
      continue;
    }
    for (; zeros > 1; --zeros) empty &= empty - 1;
    pos += static_cast<std::size_t>(std::countr_zero(empty)) + 1;
    zeros = 0;
  }
  std::size_t i = pos - h_lo;  // the members before bucket h_lo
  std::size_t first = count;
  while (pos < high_bits && i < count) {
    const std::uint64_t word = word_at(pos);
    if (word == 0) {
      pos += 64;
      continue;
    }
    pos += static_cast<std::size_t>(std::countr_zero(word));
    const std::uint64_t h = pos - i;
    if (h > h_hi) break;
    const Head bits =
        (h << low) | (low > 0 ? GetBits(p, low_bytes, i * static_cast<std::size_t>(low), low) : 0);
    if (bits > hi) break;
    if (bits >= lo) {
      if (first == count) first = i;
      if (!heads_.empty() && bits < heads_.back()) return false;
      heads_.push_back(bits);
    }
    ++i;
    ++pos;
  }
  if (first != count) {
    if (start.ids != nullptr) ids_ = start.ids + 8 * first;
    if (start.tails != nullptr) tails_ = start.tails + 8 * first;
  }
  return true;
}

template <typename Member>
bool DecodeGroupOperand(const GroupLayout& layout, std::string_view operand,
                        BasicGroupChange<Member>& change) {
  if (operand.size() < 4) return false;
  const std::uint64_t adds = GetBigEndianBytes(operand.data(), 4);
  operand.remove_prefix(4);
  const std::uint64_t add_bytes = adds * layout.member_bytes();
  if (add_bytes > operand.size()) return false;
  return DecodeOperandMembers(layout, operand.substr(0, add_bytes), change.adds) &&
         DecodeOperandMembers(layout, operand.substr(add_bytes), change.removes);
}

template <typename Member>
void EncodeGroupOperand(const GroupLayout& layout, const BasicGroupChange<Member>& change,
                        std::string& out) {
  out.resize(4);
  PutBigEndianBytes(out.data(), change.adds.size(), 4);
  AppendMembers<Member>(layout, change.adds, out);
  AppendMembers<Member>(layout, change.removes, out);
}

template bool DecodeGroupValue(const GroupLayout&, std::string_view, std::vector<Word>&);
template bool DecodeGroupValue(const GroupLayout&, std::string_view, std::vector<IdMember>&);
template void EncodeGroupValue(const GroupLayout&, const std::vector<Word>&, std::string&);
template void EncodeGroupValue(const GroupLayout&, const std::vector<IdMember>&, std::string&);
template bool DecodeGroupOperand(const GroupLayout&, std::string_view, GroupChange&);
template bool DecodeGroupOperand(const GroupLayout&, std::string_view, IdGroupChange&);
template void EncodeGroupOperand(const GroupLayout&, const GroupChange&, std::string&);
template void EncodeGroupOperand(const GroupLayout&, const IdGroupChange&, std::string&);
template bool DecodeGroupValue(const GroupLayout&, std::string_view, std::vector<Head>&);
template bool DecodeGroupValue(const GroupLayout&, std::string_view, std::vector<NarrowIdMember>&);
template void EncodeGroupValue(const GroupLayout&, const std::vector<Head>&, std::string&);
template void EncodeGroupValue(const GroupLayout&, const std::vector<NarrowIdMember>&,
                               std::string&);
template bool DecodeGroupOperand(const GroupLayout&, std::string_view, BasicGroupChange<Head>&);
template bool DecodeGroupOperand(const GroupLayout&, std::string_view,
                                 BasicGroupChange<NarrowIdMember>&);
template void EncodeGroupOperand(const GroupLayout&, const BasicGroupChange<Head>&, std::string&);
template void EncodeGroupOperand(const GroupLayout&, const BasicGroupChange<NarrowIdMember>&,
                                 std::string&);

bool GroupLayout::DecodeKey(std::string_view key, Word* group) const {
  if (key.size() != key_bytes_) return false;
  const std::uint64_t bits = GetBigEndianBytes(key.data(), key_bytes_);
  const Head g = key_bytes_ == 8 ? bits : bits << (64 - 8 * key_bytes_);
  if (GroupHead(g) != g) return false;  // padding must be zero
  *group = WordOf(g, 0);
  return true;
}

}  // namespace fpstore::internal
