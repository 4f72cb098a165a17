// The file writer under several threads (labels unit + tsan: also run under ThreadSanitizer).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/trace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pooch {
namespace {

using nlohmann::json;

json Parse(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded());
  return doc;
}

TEST(TraceTsanTest, FileWriterStreamsAndCloses) {
  std::string path = ::testing::TempDir() + "/trace_test.json";
  absl::StatusOr<std::unique_ptr<TraceWriter>> w = TraceWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  // Enough events to pass the 1 MiB flush threshold several times, from several threads.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        (*w)->Complete(1, t, "op with a reasonably long name", "cat", i, 1, {{"i", i}});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE((*w)->Flush().ok());
  EXPECT_TRUE((*w)->Close().ok());
  EXPECT_TRUE((*w)->Close().ok());
  (*w)->Complete(1, 1, "after close", "cat", 0, 1);  // dropped
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  json doc = Parse(text.str());
  EXPECT_EQ(doc["traceEvents"].size(), 12000u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pooch
