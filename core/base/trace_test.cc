#include "core/base/trace.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pooch {
namespace {

using nlohmann::json;

json Parse(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << text;
  return doc;
}

TEST(TraceTest, EveryEventTypeHasItsFields) {
  TraceWriter w;
  w.ProcessName(1, "pooch plan");
  w.ThreadName(1, 2, "compute");
  w.ThreadSortIndex(1, 2, 0);
  w.Complete(1, 2, "conv1", "forward", 10.5, 3.25, {{"op", 3}, {"bytes", int64_t{1} << 40}});
  w.Instant(1, 2, "stall", "sync", 14, {{"why", "swap-in of res2a"}});
  w.Counter(1, "device memory", 14, {{"bytes", int64_t{123}}, {"ignored", "text"}});
  EXPECT_EQ(w.event_count(), 6);

  json doc = Parse(w.Contents());
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  const json& ev = doc["traceEvents"];
  ASSERT_EQ(ev.size(), 6u);
  for (const json& e : ev) {
    EXPECT_TRUE(e.contains("name") && e.contains("ph") && e.contains("pid") && e.contains("tid"))
        << e;
  }
  EXPECT_EQ(ev[0]["ph"], "M");
  EXPECT_EQ(ev[0]["name"], "process_name");
  EXPECT_EQ(ev[0]["args"]["name"], "pooch plan");
  EXPECT_EQ(ev[1]["name"], "thread_name");
  EXPECT_EQ(ev[1]["tid"], 2);
  EXPECT_EQ(ev[2]["args"]["sort_index"], 0);
  EXPECT_EQ(ev[3]["ph"], "X");
  EXPECT_DOUBLE_EQ(ev[3]["ts"].get<double>(), 10.5);
  EXPECT_DOUBLE_EQ(ev[3]["dur"].get<double>(), 3.25);
  EXPECT_EQ(ev[3]["cat"], "forward");
  EXPECT_EQ(ev[3]["args"]["bytes"].get<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(ev[4]["ph"], "i");
  EXPECT_EQ(ev[4]["s"], "t");
  EXPECT_EQ(ev[4]["args"]["why"], "swap-in of res2a");
  EXPECT_EQ(ev[5]["ph"], "C");
  EXPECT_EQ(ev[5]["args"]["bytes"], 123);
  EXPECT_FALSE(ev[5]["args"].contains("ignored"));
}

TEST(TraceTest, EscapesAnything) {
  TraceWriter w;
  std::string nasty = "q\"b\\s\n\t\x01 \xff\xfe end \xc3\xa9";
  w.Complete(1, 1, nasty, nasty, 0, 1, {{nasty, nasty}});
  w.Counter(1, "nan", 1, {{"v", 0.0 / 0.0}});
  json doc = Parse(w.Contents());
  const json& e = doc["traceEvents"][0];
  std::string name = e["name"];
  EXPECT_EQ(name, "q\"b\\s\n\t\x01 \xef\xbf\xbd\xef\xbf\xbd end \xc3\xa9");
  EXPECT_TRUE(doc["traceEvents"][1]["args"]["v"].is_null());
}

TEST(TraceTest, EmptyDocumentIsValid) {
  TraceWriter w;
  json doc = Parse(w.Contents());
  EXPECT_TRUE(doc["traceEvents"].empty());
}

TEST(TraceTest, EmptyFileIsValid) {
  std::string path = ::testing::TempDir() + "/trace_empty.json";
  {
    absl::StatusOr<std::unique_ptr<TraceWriter>> w = TraceWriter::Open(path);
    ASSERT_TRUE(w.ok());
  }  // the destructor closes
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(Parse(text.str())["traceEvents"].empty());
  std::remove(path.c_str());
}

TEST(TraceTest, OpenFailsWithTheReason) {
  absl::StatusOr<std::unique_ptr<TraceWriter>> w = TraceWriter::Open("/nonexistent/dir/t.json");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("/nonexistent/dir/t.json"), std::string::npos);
}

}  // namespace
}  // namespace pooch
