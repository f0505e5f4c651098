#include "fpstore/fingerprinter.h"

// Inlined: a token's hash is a few instructions, which a call per token into
// the shared library would add to.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>
#include <type_traits>
#include <variant>

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "fingerprint/signature_builder.h"
#include "fingerprint/tokenizer.h"
#include "util/parse_number.h"

namespace fpstore {

namespace {

using internal::ParseNumber;

constexpr int kMaxWindow = 64;

// Fingerprinter::HashTerm, which, exported, a call here could not inline.
std::uint64_t HashToken(std::string_view token) { return XXH3_64bits(token.data(), token.size()); }

Fingerprint Wide(const XXH128_hash_t& h) { return Fingerprint(h.high64, h.low64); }

// Per-bit counts of unit-weight features with the bit set (the simhash vote is
// then ones - (n - ones)), counted in 64 byte-sized lanes, one per bit, and
// spilled into 32-bit totals before any can overflow.
class UnitVoteCounter {
 public:
  void Add(std::uint64_t hash) {
#if defined(__SSE2__) && defined(__x86_64__)
    // Each byte of the hash copied into eight lanes, then the lanes whose bit
    // is set counted: lane l of vector j is bit 16 j + l.
    const __m128i x = _mm_cvtsi64_si128(static_cast<long long>(hash));
    const __m128i pairs = _mm_unpacklo_epi8(x, x);
    const __m128i low = _mm_unpacklo_epi16(pairs, pairs);
    const __m128i high = _mm_unpackhi_epi16(pairs, pairs);
    const __m128i bits = _mm_set1_epi64x(0x8040201008040201LL);
    const __m128i spread[4] = {_mm_unpacklo_epi32(low, low), _mm_unpackhi_epi32(low, low),
                               _mm_unpacklo_epi32(high, high), _mm_unpackhi_epi32(high, high)};
    for (int j = 0; j < 4; ++j) {
      // A set bit's lane becomes all ones, -1: subtracting it counts one.
      lanes_[j] = _mm_sub_epi8(lanes_[j], _mm_cmpeq_epi8(_mm_and_si128(spread[j], bits), bits));
    }
#else
    for (int bit = 0; bit < 64; ++bit) lanes_[bit] += (hash >> bit) & 1;
#endif
    if (++pending_ == 255) Spill();
  }

  Fingerprint Result() {
    Spill();
    Fingerprint fp = 0;
    for (int bit = 0; bit < 64; ++bit) {
      if (2 * std::uint64_t{ones_[bit]} > total_) fp |= Fingerprint{1} << bit;
    }
    return fp;
  }

 private:
  void Spill() {
    std::array<std::uint8_t, 64> counts;
    std::memcpy(counts.data(), &lanes_, sizeof lanes_);
    for (int bit = 0; bit < 64; ++bit) ones_[bit] += counts[bit];
    std::memset(&lanes_, 0, sizeof lanes_);
    total_ += pending_;
    pending_ = 0;
  }

#if defined(__SSE2__) && defined(__x86_64__)
  __m128i lanes_[4] = {};
#else
  std::array<std::uint8_t, 64> lanes_{};
#endif
  std::array<std::uint32_t, 64> ones_{};
  std::uint64_t total_ = 0;
  std::uint32_t pending_ = 0;
};

// Turns a token stream into feature hashes: each token's hash when window is
// 1, otherwise the hash of every `window` consecutive token hashes.
class ShingleHasher {
 public:
  explicit ShingleHasher(int window) : window_(window) {}

  // Adds the next token by its hash (Fingerprinter::HashTerm); `token` is
  // its text, which a 128-bit feature of one token hashes again.
  template <bool kWide, typename Sink>
  void Add(std::uint64_t h, std::string_view token, Sink&& sink) {
    if (window_ == 1) {
      if constexpr (kWide) {
        sink(Wide(XXH3_128bits(token.data(), token.size())));
      } else {
        sink(h);
      }
      return;
    }
    // Each hash is kept twice, window_ apart, so that the last window_ of
    // them always lie side by side, oldest first, ending at newest + window_.
    if constexpr (std::endian::native == std::endian::big) h = __builtin_bswap64(h);
    newest_ = newest_ + 1 == window_ ? 0 : newest_ + 1;
    ring_[newest_] = ring_[newest_ + window_] = h;
    ++count_;
    if (count_ >= static_cast<std::uint64_t>(window_)) sink(HashLast<kWide>(window_));
  }

  // A text shorter than one window still gets a feature: all its tokens.
  template <bool kWide, typename Sink>
  void Finish(Sink&& sink) {
    if (window_ > 1 && count_ > 0 && count_ < static_cast<std::uint64_t>(window_)) {
      sink(HashLast<kWide>(static_cast<int>(count_)));
    }
  }

 private:
  // The hash of the last n token hashes, oldest first, as little-endian
  // bytes, so the feature hash is the same on every machine: XXH3-64, or
  // XXH3-128 for 128-bit fingerprints.
  template <bool kWide>
  auto HashLast(int n) const {
    const void* first = &ring_[newest_ + window_ - n + 1];
    const std::size_t bytes = 8 * static_cast<std::size_t>(n);
    if constexpr (kWide) {
      return Wide(XXH3_128bits(first, bytes));
    } else {
      return XXH3_64bits(first, bytes);
    }
  }

  int window_;
  int newest_ = -1;  // where the newest hash is, in [0, window_)
  std::uint64_t count_ = 0;
  std::array<std::uint64_t, 2 * kMaxWindow> ring_{};
};

const char* WeightingName(FeatureWeighting w) {
  return w == FeatureWeighting::kPresence ? "presence" : "tf";
}

// By the ASCII fast path where it applies; `buffer` is its scratch.
template <typename Emit>
Status ForEachToken(std::string_view utf8, std::string& buffer, Emit&& emit) {
  if (internal::IsAscii(utf8)) {
    internal::TokenizeAscii(utf8, buffer, emit);
    return Status::OK();
  }
  return internal::TokenizeUnicode(utf8, emit);
}

}  // namespace

std::string FingerprintOptions::ToString() const {
  return "v" + std::to_string(version) + " window=" + std::to_string(window) +
         " weighting=" + WeightingName(weighting) +
         " signature=" + std::to_string(signature_bytes) +
         " signature_window=" + std::to_string(signature_window) +
         (bits == 64 ? "" : " bits=" + std::to_string(bits));
}

Result<FingerprintOptions> FingerprintOptions::Parse(std::string_view text) {
  const std::string original(text);
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("fingerprint options \"" + original + "\": " + std::string(why));
  };
  FingerprintOptions options;
  bool seen_version = false, seen_window = false, seen_weighting = false;
  bool seen_slots = false, seen_signature_window = false, seen_bits = false;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view field = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (field.starts_with('v') && !seen_version) {
      if (!ParseNumber(field.substr(1), options.version)) return bad("bad version");
      seen_version = true;
    } else if (field.starts_with("window=") && !seen_window) {
      if (!ParseNumber(field.substr(7), options.window)) return bad("bad window");
      seen_window = true;
    } else if (field.starts_with("signature=") && !seen_slots) {
      if (!ParseNumber(field.substr(10), options.signature_bytes)) return bad("bad signature");
      seen_slots = true;
    } else if (field.starts_with("signature_window=") && !seen_signature_window) {
      if (!ParseNumber(field.substr(17), options.signature_window)) {
        return bad("bad signature_window");
      }
      seen_signature_window = true;
    } else if (field.starts_with("bits=") && !seen_bits) {
      if (!ParseNumber(field.substr(5), options.bits)) return bad("bad bits");
      seen_bits = true;
    } else if (field.starts_with("weighting=") && !seen_weighting) {
      const std::string_view name = field.substr(10);
      if (name == "tf") {
        options.weighting = FeatureWeighting::kTermFrequency;
      } else if (name == "presence") {
        options.weighting = FeatureWeighting::kPresence;
      } else {
        return bad("unknown weighting (expected tf or presence)");
      }
      seen_weighting = true;
    } else {
      return bad("unexpected field \"" + std::string(field) + "\"");
    }
  }
  if (!seen_version || !seen_window || !seen_weighting || !seen_slots || !seen_signature_window) {
    return bad(
        "expected \"v<version> window=<n> weighting=<tf|presence> signature=<slots> "
        "signature_window=<n> [bits=128]\"");
  }
  if (Status s = options.Validate(); !s.ok()) {
    return s.WithContext("fingerprint options \"" + original + "\"");
  }
  return options;
}

Status FingerprintOptions::Validate() const {
  if (version != 2) {
    return Status::NotSupported("fingerprint version " + std::to_string(version) +
                                " (this build knows version 2)");
  }
  if (bits != 64 && bits != 128) {
    return Status::InvalidArgument("bits " + std::to_string(bits) + " out of range (64 or 128)");
  }
  if (window < 1 || window > kMaxWindow) {
    return Status::InvalidArgument("window " + std::to_string(window) + " out of range (1 to 64)");
  }
  if (signature_bytes != 0 &&
      (signature_bytes < 0 || !Signature::ValidSize(static_cast<std::size_t>(signature_bytes)))) {
    return Status::InvalidArgument("signature bytes " + std::to_string(signature_bytes) +
                                   " out of range (0, or a power of two from " +
                                   std::to_string(Signature::kMinBytes) + " to " +
                                   std::to_string(Signature::kMaxBytes) + ")");
  }
  if (signature_window < 1 || signature_window > kMaxWindow) {
    return Status::InvalidArgument("signature window " + std::to_string(signature_window) +
                                   " out of range (1 to 64)");
  }
  return Status::OK();
}

Result<Fingerprinter> Fingerprinter::Create(const FingerprintOptions& options) {
  if (Status s = options.Validate(); !s.ok()) return s;
  return Fingerprinter(options);
}

std::uint64_t Fingerprinter::HashTerm(std::string_view term) { return HashToken(term); }

namespace {

// Per-bit votes of unit-weight features of 64 or 128 bits.
template <bool kWide>
class Votes {
 public:
  void Add(Fingerprint feature) {
    low_.Add(feature.low());
    if constexpr (kWide) high_.Add(feature.high());
  }
  Fingerprint Result() {
    if constexpr (kWide) return Fingerprint(high_.Result().low(), low_.Result().low());
    return low_.Result();
  }

 private:
  UnitVoteCounter low_;
  [[no_unique_address]] std::conditional_t<kWide, UnitVoteCounter, std::monostate> high_;
};

// The fingerprint of `utf8` under `options`, and into *signature, when not
// null, the slots of its signature: one pass over the tokens.
template <bool kWide>
Result<Fingerprint> Analyze(const FingerprintOptions& options, std::string_view utf8,
                            std::string* signature) {
  // The ASCII path's scratch. Not thread_local: in a shared library each
  // access to one may call __tls_get_addr, which showed in profiles per
  // token; one allocation a text costs less.
  std::string buffer;
  ShingleHasher shingles(options.window);
  std::optional<internal::SignatureBuilder> slots;
  if (signature != nullptr && options.signature_bytes > 0) {
    slots.emplace(options.signature_bytes, options.signature_window);
  }
  using Feature = std::conditional_t<kWide, Fingerprint, std::uint64_t>;
  std::vector<Feature> features;  // kPresence: every feature, to count each once
  Votes<kWide> votes;
  auto vote = [&](Feature feature) {
    if (options.weighting == FeatureWeighting::kTermFrequency) {
      votes.Add(feature);
    } else {
      features.push_back(feature);
    }
  };
  Status s = ForEachToken(utf8, buffer, [&](std::string_view t) {
    const std::uint64_t h = HashToken(t);
    shingles.Add<kWide>(h, t, vote);
    if (slots) slots->AddToken(h);
  });
  if (!s.ok()) return s;
  shingles.Finish<kWide>(vote);
  if (slots) *signature = slots->Finish();
  if (options.weighting == FeatureWeighting::kPresence) {
    std::sort(features.begin(), features.end());
    features.erase(std::unique(features.begin(), features.end()), features.end());
    for (const Feature f : features) votes.Add(f);
  }
  return votes.Result();
}

Result<Fingerprint> Analyze(const FingerprintOptions& options, std::string_view utf8,
                            std::string* signature) {
  return options.bits == 128 ? Analyze<true>(options, utf8, signature)
                             : Analyze<false>(options, utf8, signature);
}

}  // namespace

Result<Fingerprint> Fingerprinter::FromText(std::string_view utf8) const {
  return Analyze(options_, utf8, nullptr);
}

Result<Sketch> Fingerprinter::SketchText(std::string_view utf8) const {
  std::string slots;
  Result<Fingerprint> fingerprint = Analyze(options_, utf8, &slots);
  if (!fingerprint.ok()) return fingerprint.status();
  return Sketch{*fingerprint, Signature(std::move(slots))};
}

Result<std::vector<std::string>> Fingerprinter::Tokens(std::string_view utf8) const {
  std::string buffer;
  std::vector<std::string> tokens;
  Status s = ForEachToken(utf8, buffer, [&](std::string_view t) { tokens.emplace_back(t); });
  if (!s.ok()) return s;
  return tokens;
}

Fingerprint Fingerprinter::FromTerms(std::span<const WeightedTerm> terms) const {
  std::vector<WeightedFeature> features;
  features.reserve(terms.size());
  for (const WeightedTerm& t : terms) {
    const Fingerprint hash = options_.bits == 128 ? Wide(XXH3_128bits(t.term.data(), t.term.size()))
                                                  : Fingerprint(HashTerm(t.term));
    features.push_back({hash, t.weight});
  }
  return Simhash(features, options_.bits);
}

}  // namespace fpstore
