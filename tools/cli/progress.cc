#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace fpstore::cli {
namespace {

constexpr double kMegabyte = 1e6;

std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string Megabytes(std::uint64_t bytes) {
  return Fixed(static_cast<double>(bytes) / kMegabyte, 1);
}

// 7 -> "0:07", 3725 -> "1:02:05".
std::string Clock(double seconds) {
  const auto total = static_cast<std::uint64_t>(std::max(0.0, std::round(seconds)));
  char buffer[64];
  if (total >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%llu:%02llu:%02llu",
                  static_cast<unsigned long long>(total / 3600),
                  static_cast<unsigned long long>(total / 60 % 60),
                  static_cast<unsigned long long>(total % 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%llu:%02llu",
                  static_cast<unsigned long long>(total / 60),
                  static_cast<unsigned long long>(total % 60));
  }
  return buffer;
}

double Rate(std::uint64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds : 0;
}

// The fraction done, when the total is known and not zero.
std::optional<double> Fraction(const Progress::Snapshot& s) {
  if (!s.total_bytes || *s.total_bytes == 0) return std::nullopt;
  return std::min(1.0, static_cast<double>(s.bytes) / static_cast<double>(*s.total_bytes));
}

// Seconds left at the average rate so far, when it can be estimated.
std::optional<double> Eta(const Progress::Snapshot& s) {
  if (!s.total_bytes || s.bytes == 0 || s.seconds <= 0) return std::nullopt;
  const double left = static_cast<double>(*s.total_bytes > s.bytes ? *s.total_bytes - s.bytes : 0);
  return left / Rate(s.bytes, s.seconds);
}

int TerminalWidth(std::FILE* stream) {
  struct winsize size {};
  if (::ioctl(::fileno(stream), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

}  // namespace

std::string WithCommas(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

Progress::Style Progress::AutoStyle(bool quiet, std::FILE* stream, bool lines_when_not_terminal) {
  if (quiet) return Style::kNone;
  if (::isatty(::fileno(stream))) return Style::kBar;
  return lines_when_not_terminal ? Style::kLines : Style::kNone;
}

Progress::Progress(Options options)
    : options_(std::move(options)), start_(std::chrono::steady_clock::now()) {
  if (options_.style != Style::kNone) reporter_ = std::thread([this] { Report(); });
}

Progress::~Progress() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (reporter_.joinable()) reporter_.join();
}

Progress::Snapshot Progress::Now() const {
  Snapshot s;
  s.documents = documents_.load(std::memory_order_relaxed);
  s.skipped = skipped_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.total_bytes = options_.total_bytes;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return s;
}

void Progress::Report() {
  using std::chrono::milliseconds;
  const milliseconds interval = options_.interval.value_or(
      options_.style == Style::kBar ? milliseconds(200) : milliseconds(10'000));
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval, [this] { return stop_; })) Show(Now());
}

void Progress::Show(const Snapshot& s) {
  if (options_.style == Style::kBar) {
    const int width = TerminalWidth(options_.stream);
    const std::string prefix = options_.label.empty() ? "" : options_.label + ": ";
    const int room = std::max(10, width - 1 - static_cast<int>(prefix.size()));
    std::fprintf(options_.stream, "\r%s%s\x1b[K", prefix.c_str(), FormatBar(s, room).c_str());
  } else {
    std::fprintf(options_.stream, "%s%s%s\n", options_.label.c_str(),
                 options_.label.empty() ? "" : ": ", FormatLine(s).c_str());
  }
  std::fflush(options_.stream);
}

void Progress::Finish(std::string_view verb) {
  if (finished_) return;
  finished_ = true;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (reporter_.joinable()) reporter_.join();
  if (options_.style == Style::kNone) return;
  if (options_.style == Style::kBar) std::fputs("\r\x1b[K", options_.stream);
  std::fprintf(options_.stream, "%s%s%s\n", options_.label.c_str(),
               options_.label.empty() ? "" : ": ", FormatSummary(Now(), verb).c_str());
  std::fflush(options_.stream);
}

std::string Progress::FormatBar(const Snapshot& s, int width) {
  std::string text = WithCommas(s.documents) + " docs  ";
  const std::optional<double> fraction = Fraction(s);
  if (fraction) {
    text += Megabytes(s.bytes) + "/" + Megabytes(*s.total_bytes) + " MB  ";
  } else {
    text += Megabytes(s.bytes) + " MB  ";
  }
  text += Fixed(Rate(s.bytes, s.seconds) / kMegabyte, 1) + " MB/s";
  if (const std::optional<double> eta = Eta(s)) text += "  ETA " + Clock(*eta);

  if (fraction) {
    const std::string percent = std::to_string(static_cast<int>(*fraction * 100)) + "% ";
    const int bar = std::min(40, width - static_cast<int>(text.size() + percent.size()) - 4);
    if (bar >= 10) {
      const int filled = static_cast<int>(*fraction * bar);
      std::string drawn(static_cast<std::size_t>(bar), ' ');
      std::fill_n(drawn.begin(), filled, '=');
      if (filled < bar) drawn[static_cast<std::size_t>(filled)] = '>';
      text = "[" + drawn + "] " + percent + " " + text;
    } else {
      text = percent + " " + text;
    }
  }
  if (static_cast<int>(text.size()) > width)
    text.resize(static_cast<std::size_t>(std::max(0, width)));
  return text;
}

std::string Progress::FormatLine(const Snapshot& s) {
  std::string text = WithCommas(s.documents) + " documents, " + Megabytes(s.bytes) + " MB";
  if (const std::optional<double> fraction = Fraction(s)) {
    text += " of " + Megabytes(*s.total_bytes) + " MB (" +
            std::to_string(static_cast<int>(*fraction * 100)) + "%)";
  }
  if (s.skipped > 0) text += ", " + WithCommas(s.skipped) + " skipped";
  text += ", " + WithCommas(static_cast<std::uint64_t>(Rate(s.documents, s.seconds))) +
          " documents/s, " + Fixed(Rate(s.bytes, s.seconds) / kMegabyte, 1) + " MB/s";
  if (const std::optional<double> eta = Eta(s)) text += ", ETA " + Clock(*eta);
  return text;
}

std::string Progress::FormatSummary(const Snapshot& s, std::string_view verb) {
  std::string text = std::string(verb) + " " + WithCommas(s.documents) +
                     (s.documents == 1 ? " document (" : " documents (") + Megabytes(s.bytes) +
                     " MB) in " + Fixed(s.seconds, 2) + " s, " +
                     WithCommas(static_cast<std::uint64_t>(Rate(s.documents, s.seconds))) +
                     " documents/s, " + Fixed(Rate(s.bytes, s.seconds) / kMegabyte, 1) + " MB/s";
  if (s.skipped > 0) text += "; skipped " + WithCommas(s.skipped);
  return text;
}

WorkProgress::WorkProgress(Progress::Style style, std::string label, std::string what,
                           std::FILE* stream)
    : style_(style), label_(std::move(label)), what_(std::move(what)), stream_(stream) {}

WorkProgress::~WorkProgress() { Finish(); }

std::function<void(std::uint64_t, std::uint64_t)> WorkProgress::Callback() {
  return [this](std::uint64_t done, std::uint64_t total) { Update(done, total); };
}

void WorkProgress::Update(std::uint64_t done, std::uint64_t total) {
  if (style_ == Progress::Style::kNone) return;
  const auto now = std::chrono::steady_clock::now();
  if (!started_) {
    // The clock starts with the work, not with this object.
    started_ = true;
    start_ = last_ = now;
    return;
  }
  const auto interval = style_ == Progress::Style::kBar ? std::chrono::milliseconds(200)
                                                        : std::chrono::milliseconds(10'000);
  if (now - last_ < interval) return;
  last_ = now;
  const double fraction =
      total == 0 ? 0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string eta;
  if (fraction > 0) eta = "ETA " + Clock(elapsed * (1 - fraction) / fraction);
  const int percent = static_cast<int>(fraction * 100);
  const std::string prefix = label_.empty() ? "" : label_ + ": ";
  if (style_ == Progress::Style::kBar) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(kWidth, ' ');
    std::fill_n(bar.begin(), filled, '=');
    if (filled < kWidth) bar[static_cast<std::size_t>(filled)] = '>';
    std::fprintf(stream_, "\r%s%s [%s] %d%%  %s\x1b[K", prefix.c_str(), what_.c_str(), bar.c_str(),
                 percent, eta.c_str());
    shown_ = true;
  } else {
    std::fprintf(stream_, "%s%s: %d%% done%s%s\n", prefix.c_str(), what_.c_str(), percent,
                 eta.empty() ? "" : ", ", eta.c_str());
  }
  std::fflush(stream_);
}

void WorkProgress::Finish() {
  if (!shown_) return;
  shown_ = false;
  std::fputs("\r\x1b[K", stream_);
  std::fflush(stream_);
}

}  // namespace fpstore::cli
