#include "cli/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace fpstore::cli {
namespace {

using namespace std::chrono_literals;

Progress::Snapshot Halfway() {
  Progress::Snapshot s;
  s.documents = 1'234'567;
  s.skipped = 0;
  s.bytes = 512'000'000;
  s.total_bytes = 1'130'200'000;
  s.seconds = 10;
  return s;
}

// Everything written to a temporary FILE*.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), file)) text.append(buffer, n);
  return text;
}

TEST(ProgressTest, LineShowsCountsRateAndEta) {
  EXPECT_EQ(Progress::FormatLine(Halfway()),
            "1,234,567 documents, 512.0 MB of 1130.2 MB (45%), 123,456 documents/s, "
            "51.2 MB/s, ETA 0:12");
  Progress::Snapshot unknown_size = Halfway();
  unknown_size.total_bytes.reset();
  unknown_size.skipped = 3;
  EXPECT_EQ(Progress::FormatLine(unknown_size),
            "1,234,567 documents, 512.0 MB, 3 skipped, 123,456 documents/s, 51.2 MB/s");
  EXPECT_EQ(Progress::FormatLine(Progress::Snapshot{}),
            "0 documents, 0.0 MB, 0 documents/s, 0.0 MB/s");
}

TEST(ProgressTest, BarFitsTheWidth) {
  for (int width : {10, 40, 80, 200}) {
    const std::string bar = Progress::FormatBar(Halfway(), width);
    EXPECT_LE(static_cast<int>(bar.size()), width) << bar;
  }
  const std::string bar = Progress::FormatBar(Halfway(), 120);
  EXPECT_EQ(bar.front(), '[') << bar;
  EXPECT_NE(bar.find("45%"), std::string::npos) << bar;
  EXPECT_NE(bar.find("1,234,567 docs  512.0/1130.2 MB  51.2 MB/s  ETA 0:12"), std::string::npos)
      << bar;
  Progress::Snapshot unknown_size = Halfway();
  unknown_size.total_bytes.reset();
  EXPECT_EQ(Progress::FormatBar(unknown_size, 120), "1,234,567 docs  512.0 MB  51.2 MB/s");
}

TEST(ProgressTest, SummarySaysWhatWasDone) {
  Progress::Snapshot s = Halfway();
  EXPECT_EQ(Progress::FormatSummary(s, "loaded"),
            "loaded 1,234,567 documents (512.0 MB) in 10.00 s, 123,456 documents/s, 51.2 MB/s");
  s.skipped = 2;
  s.documents = 1;
  EXPECT_EQ(Progress::FormatSummary(s, "loaded"),
            "loaded 1 document (512.0 MB) in 10.00 s, 0 documents/s, 51.2 MB/s; skipped 2");
}

TEST(ProgressTest, CountsFromManyThreads) {
  Progress progress(Progress::Options{});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&progress] {
      for (int i = 0; i < 10'000; ++i) {
        progress.AddDocuments(1);
        progress.AddBytes(10);
        if (i % 100 == 0) progress.AddSkipped(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Progress::Snapshot s = progress.Now();
  EXPECT_EQ(s.documents, 80'000u);
  EXPECT_EQ(s.bytes, 800'000u);
  EXPECT_EQ(s.skipped, 800u);
}

TEST(ProgressTest, LinesReportPeriodicallyThenSummarise) {
  std::FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  {
    Progress::Options options;
    options.style = Progress::Style::kLines;
    options.label = "test";
    options.total_bytes = 1000;
    options.interval = 10ms;
    options.stream = stream;
    Progress progress(options);
    progress.AddDocuments(5);
    progress.AddBytes(500);
    std::this_thread::sleep_for(100ms);
    progress.Finish("fingerprinted");
    progress.Finish("twice");  // no second summary
  }
  const std::string text = Contents(stream);
  std::fclose(stream);
  EXPECT_NE(text.find("test: 5 documents, 0.0 MB of 0.0 MB (50%)"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntest: fingerprinted 5 documents (0.0 MB) in "), std::string::npos) << text;
  EXPECT_EQ(text.find("twice"), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos) << "no bar in a log";
}

TEST(ProgressTest, BarRedrawsInPlaceAndClearsForTheSummary) {
  std::FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  {
    Progress::Options options;
    options.style = Progress::Style::kBar;
    options.interval = 10ms;
    options.stream = stream;
    Progress progress(options);
    progress.AddDocuments(3);
    std::this_thread::sleep_for(60ms);
    progress.Finish("loaded");
  }
  const std::string text = Contents(stream);
  std::fclose(stream);
  EXPECT_TRUE(text.starts_with("\r3 docs")) << text;
  EXPECT_NE(text.find("\r\x1b[Kloaded 3 documents"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\n"));
}

TEST(ProgressTest, QuietPrintsNothing) {
  std::FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  {
    Progress::Options options;
    options.style = Progress::Style::kNone;
    options.interval = 1ms;
    options.stream = stream;
    Progress progress(options);
    progress.AddDocuments(3);
    std::this_thread::sleep_for(20ms);
    progress.Finish("loaded");
  }
  EXPECT_EQ(Contents(stream), "");
  std::fclose(stream);
}

TEST(ProgressTest, AutoStyle) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(Progress::AutoStyle(true, file), Progress::Style::kNone);
  EXPECT_EQ(Progress::AutoStyle(false, file), Progress::Style::kLines);
  EXPECT_EQ(Progress::AutoStyle(false, file, false), Progress::Style::kNone);
  std::fclose(file);
}

}  // namespace
}  // namespace fpstore::cli
