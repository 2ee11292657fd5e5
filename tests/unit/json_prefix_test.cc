// The incremental JSON checker behind attrs/: a write is refused exactly when
// the text can no longer become one JSON value.
#include "json_prefix.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace blosc2fs {
namespace {

bool prefix_ok(const std::string& text) {
  JsonPrefixChecker c;
  return c.feed(text);
}

bool complete(const std::string& text) {
  JsonPrefixChecker c;
  c.feed(text);
  return c.complete();
}

TEST(JsonPrefix, ValidPrefixesAreAccepted) {
  for (const char* text : {"", " ", "{", "{\"", "{\"a", "{\"a\"", "{\"a\":", "{\"a\": [1, 2", "[", "[1,", "t", "tr",
                           "fals", "nul", "-", "-0", "1.", "1.5e", "1.5e+", "\"abc\\", "\"\\u00", "[{\"x\":{}}, ",
                           "\"caf\xc3\xa9"}) {
    EXPECT_TRUE(prefix_ok(text)) << text;
  }
}

TEST(JsonPrefix, BrokenTextIsRefusedAtTheFirstBadCharacter) {
  for (const char* text : {"x", "{a", "{\"a\" 1", "[1 2", "[1,]", "{\"a\":1,}", "tx", "nulll", "01", "-a", "1.e",
                           "1e+x", "\"\\x\"", "\"\\u12g\"", "{} {}", "1 2", "]", "}", "{\"a\":1]", "[1}",
                           "\"tab\there\"", "[,"}) {
    EXPECT_FALSE(prefix_ok(text)) << text;
  }
}

TEST(JsonPrefix, CompleteValues) {
  for (const char* text : {"1", "-0.5e3", "true\n", "null", "\"s\"", "{}", "[]", " {\"a\": [1, {\"b\": null}]} \n"})
    EXPECT_TRUE(complete(text)) << text;
  for (const char* text : {"", "  ", "{", "[1", "\"s", "tru", "1.", "-"}) EXPECT_FALSE(complete(text)) << text;
}

TEST(JsonPrefix, FeedingInPiecesEqualsFeedingAtOnce) {
  const std::string text = "{\"key\": [1.25e-3, true, null, \"x\\\"y\\u0041\"], \"n\": -12}\n";
  for (size_t piece = 1; piece <= 7; ++piece) {
    JsonPrefixChecker c;
    for (size_t at = 0; at < text.size(); at += piece) ASSERT_TRUE(c.feed(text.substr(at, piece))) << piece;
    EXPECT_TRUE(c.complete());
  }
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(JsonPrefix, NestingBeyondWhatMsgpackStoresIsRefused) {
  EXPECT_TRUE(prefix_ok(std::string(JsonPrefixChecker::kMaxNesting, '[')));
  EXPECT_FALSE(prefix_ok(std::string(JsonPrefixChecker::kMaxNesting + 1, '[')));
}

TEST(JsonPrefix, AgreesWithTheParserOnCompleteTexts) {
  for (const char* text : {"{\"a\":1}", "[1,2,3]", "\"\\ud83d\\ude00\"", "1e5", "[true,false]", "{\"a\":}", "[01]",
                           "{\"a\" \"b\"}", "[1,]", "-", "\"a\"\"b\""}) {
    JsonPrefixChecker c;
    const bool ok = c.feed(text) && c.complete();
    EXPECT_EQ(ok, nlohmann::json::accept(std::string(text))) << text;
  }
}

}  // namespace
}  // namespace blosc2fs
