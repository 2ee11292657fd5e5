// multipart/byteranges answers taken apart strictly: what a server such as
// Starlette sends, and what a hostile or broken one might.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "byteranges.h"

namespace blosc2fs {
namespace {

const std::string kType = "multipart/byteranges; boundary=3d6b6a416f9b5";

ByteSpan span(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string part(const std::string& range, const std::string& bytes, const std::string& extra = "") {
  return "--3d6b6a416f9b5\r\nContent-Type: application/octet-stream\r\n" + extra + "Content-Range: " + range +
         "\r\n\r\n" + bytes + "\r\n";
}

// Two parts as Starlette sends them: no CRLF before the first delimiter, none after the last.
const std::string kGood = part("bytes 0-3/100", "abcd") + part("bytes 96-99/100", "wxyz") + "--3d6b6a416f9b5--";

std::string bytes_of(const std::string& body, const BytePart& p) {
  return body.substr(p.offset, size_t(p.last - p.first + 1));
}

void expect_refused(const std::string& body, const std::string& type = kType, size_t max_parts = 4) {
  EXPECT_THROW(parse_byteranges(type, span(body), max_parts), std::runtime_error) << body;
}

TEST(ByteRanges, TwoPartsAsStarletteSendsThem) {
  auto parts = parse_byteranges(kType, span(kGood), 4);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].first, 0);
  EXPECT_EQ(parts[0].last, 3);
  EXPECT_EQ(parts[0].total, 100);
  EXPECT_EQ(bytes_of(kGood, parts[0]), "abcd");
  EXPECT_EQ(parts[1].first, 96);
  EXPECT_EQ(bytes_of(kGood, parts[1]), "wxyz");
  // A leading CRLF and a trailing one are allowed (RFC 2046); so is a quoted boundary.
  const std::string framed = "\r\n" + kGood + "\r\n";
  EXPECT_EQ(parse_byteranges("Multipart/ByteRanges; boundary=\"3d6b6a416f9b5\"", span(framed), 4).size(), 2u);
}

TEST(ByteRanges, PartBytesMayHoldTheBoundaryText) {
  // The lengths come from Content-Range, so the data may look like anything.
  const std::string body = part("bytes 0-20/30", "\r\n--3d6b6a416f9b5--\r\n") + "--3d6b6a416f9b5--";
  auto parts = parse_byteranges(kType, span(body), 4);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(bytes_of(body, parts[0]), "\r\n--3d6b6a416f9b5--\r\n");
}

TEST(ByteRanges, ContentTypesWithoutAUsableBoundaryAreRefused) {
  for (const char* type : {"application/octet-stream", "multipart/byteranges", "multipart/byteranges; boundary=",
                           "multipart/mixed; boundary=3d6b6a416f9b5", "multipart/byteranges; boundary=a b",
                           "multipart/byteranges; boundary=a;boundary=b", "multipart/byteranges; boundary=x\x01y"})
    expect_refused(kGood, type);
  EXPECT_FALSE(byteranges_boundary("multipart/byteranges; boundary=" + std::string(71, 'a')));
  EXPECT_EQ(byteranges_boundary("multipart/byteranges; charset=x; boundary=" + std::string(70, 'a')),
            std::string(70, 'a'));
}

TEST(ByteRanges, LengthsMustBeExact) {
  // One byte more or fewer than Content-Range says.
  expect_refused(part("bytes 0-3/100", "abcde") + "--3d6b6a416f9b5--");
  expect_refused(part("bytes 0-3/100", "abc") + "--3d6b6a416f9b5--");
  // Cut short inside a part, or before the closing delimiter.
  expect_refused(kGood.substr(0, 70));
  expect_refused(kGood.substr(0, kGood.size() - 2));
  expect_refused(part("bytes 0-3/100", "abcd"));
}

TEST(ByteRanges, ContentRangesMustBeWholeAndAgree) {
  for (const char* range : {"bytes 3-0/100", "bytes 0-3/*", "bytes */100", "bytes 0-3", "items 0-3/100",
                            "bytes -1-3/100", "bytes 0-100/100", "bytes 0-3/99999999999999999999",
                            "bytes 0x0-3/100", "bytes  0-3/100"})
    expect_refused(part(range, "abcd") + "--3d6b6a416f9b5--");
  // Two parts that disagree on the object's size.
  expect_refused(part("bytes 0-3/100", "abcd") + part("bytes 96-99/101", "wxyz") + "--3d6b6a416f9b5--");
  // No Content-Range, or two.
  expect_refused("--3d6b6a416f9b5\r\nContent-Type: x\r\n\r\nabcd\r\n--3d6b6a416f9b5--");
  expect_refused(part("bytes 0-3/100", "abcd", "Content-Range: bytes 0-3/100\r\n") + "--3d6b6a416f9b5--");
}

TEST(ByteRanges, StructureMustBeExact) {
  expect_refused("");
  expect_refused("--3d6b6a416f9b5--");                               // no parts
  expect_refused("preamble\r\n" + kGood);                             // a preamble
  expect_refused(kGood + "\r\nepilogue");                             // an epilogue
  expect_refused(kGood + "--3d6b6a416f9b5--");                        // two closings
  expect_refused(part("bytes 0-3/100", "abcd") + "--other--");        // a wrong boundary
  expect_refused("--3d6b6a416f9b5\nContent-Range: bytes 0-3/100\n\nabcd\n--3d6b6a416f9b5--");  // bare LFs
  expect_refused(part("bytes 0-3/100", "abcd", "Content-Encoding: gzip\r\n") + "--3d6b6a416f9b5--");
  expect_refused(part("bytes 0-3/100", "abcd", "NoColonHere\r\n") + "--3d6b6a416f9b5--");
  // Headers that never end, or go on too long.
  expect_refused("--3d6b6a416f9b5\r\nContent-Range: bytes 0-3/100\r\n" + std::string(5000, 'x'));
  expect_refused(part("bytes 0-3/100", "abcd", "X-Pad: " + std::string(2000, 'p') + "\r\n") + "--3d6b6a416f9b5--");
}

TEST(ByteRanges, PartsAreBounded) {
  std::string body;
  for (int i = 0; i < 5; ++i) body += part("bytes " + std::to_string(i) + "-" + std::to_string(i) + "/10", "x");
  body += "--3d6b6a416f9b5--";
  EXPECT_EQ(parse_byteranges(kType, span(body), 5).size(), 5u);
  expect_refused(body, kType, 4);
}

TEST(ByteRanges, SingleContentRange) {
  auto r = parse_content_range("bytes 0-99/1467");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0);
  EXPECT_EQ(r->last, 99);
  EXPECT_EQ(r->total, 1467);
  r = parse_content_range("bytes */0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->total, 0);
  EXPECT_EQ(r->first, -1);
  EXPECT_FALSE(parse_content_range("bytes 5-4/10"));
  EXPECT_FALSE(parse_content_range("bytes 0-10/10"));
  EXPECT_FALSE(parse_content_range("bytes 0-+1/10"));
}

}  // namespace
}  // namespace blosc2fs
