// Fingerprinting throughput, bytes per second of text.
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "fpstore/fingerprinter.h"

namespace {

std::string EnglishCorpus() {
  std::string all;
  for (const char* name : {"GPL-3", "Apache-2.0", "MPL-2.0", "Artistic", "LGPL-2.1"}) {
    std::ifstream in(std::string("/usr/share/common-licenses/") + name);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

std::string ChineseCorpus() {
  static const char* kWords[] = {"网络", "爬虫", "网页", "内容", "重复", "检测", "算法", "指纹",
                                 "数据", "存储", "系统", "用户", "搜索", "引擎", "文档", "相似"};
  std::mt19937 rng(1);
  std::string text;
  while (text.size() < 200000) {
    text += kWords[rng() % std::size(kWords)];
    if (rng() % 10 == 0) text += "，";
  }
  return text;
}

void BM_Fingerprint(benchmark::State& state, const std::string& text, int window) {
  auto f = fpstore::Fingerprinter::Create({.window = window});
  for (auto _ : state) benchmark::DoNotOptimize(*f->FromText(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

const std::string kEnglish = EnglishCorpus();
const std::string kChinese = ChineseCorpus();

BENCHMARK_CAPTURE(BM_Fingerprint, english_window1, kEnglish, 1);
BENCHMARK_CAPTURE(BM_Fingerprint, english_window3, kEnglish, 3);
BENCHMARK_CAPTURE(BM_Fingerprint, chinese_window1, kChinese, 1);
BENCHMARK_CAPTURE(BM_Fingerprint, chinese_window3, kChinese, 3);

}  // namespace

BENCHMARK_MAIN();
