// The remote transport's logic that needs no server: URLs, credentials, header
// files, S3 listings, the range cache's budget. (The servers are in
// integration.test_remote.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "credentials.h"
#include "fixtures.h"
#include "options.h"
#include "range_cache.h"
#include "remote_url.h"
#include "s3_listing.h"

namespace blosc2fs {
namespace {

using testing::TempDir;

TEST(RemoteUrl, HttpUrlsKeepTheirPathAndShowNoQuery) {
  RemoteUrl u = parse_remote_url("https://host:8443/data/x.b2nd?X-Amz-Signature=secret");
  EXPECT_FALSE(u.s3());
  EXPECT_EQ(u.request, "https://host:8443/data/x.b2nd?X-Amz-Signature=secret");
  EXPECT_EQ(u.display(), "https://host:8443/data/x.b2nd");
  EXPECT_FALSE(u.names_directory());
  EXPECT_EQ(u.child("00000001.chunk").request, "https://host:8443/data/x.b2nd/00000001.chunk");
  EXPECT_EQ(u.child("a b/c%.b2nd").request, "https://host:8443/data/x.b2nd/a%20b/c%25.b2nd");
  EXPECT_TRUE(parse_remote_url("http://h/dir/").names_directory());
  EXPECT_EQ(parse_remote_url("http://h").request, "http://h/");
}

TEST(RemoteUrl, S3UrlsArePathStyleBelowAnEndpointElseVirtualHosted) {
  RemoteUrl p = parse_remote_url("s3://bucket/set/x y.b2nd", "http://127.0.0.1:8333/", "eu-west-1");
  EXPECT_TRUE(p.s3());
  EXPECT_EQ(p.request, "http://127.0.0.1:8333/bucket/set/x%20y.b2nd");
  EXPECT_EQ(p.display(), "s3://bucket/set/x y.b2nd");
  EXPECT_EQ(p.region, "eu-west-1");
  EXPECT_EQ(p.as_directory().key, "set/x y.b2nd/");
  EXPECT_EQ(p.child("chunks.b2frame").request, "http://127.0.0.1:8333/bucket/set/x%20y.b2nd/chunks.b2frame");
  RemoteUrl v = parse_remote_url("s3://my-bucket/k", "", "us-west-2");
  EXPECT_EQ(v.request, "https://my-bucket.s3.us-west-2.amazonaws.com/k");
  EXPECT_TRUE(parse_remote_url("s3://bucket", "http://e").names_directory());
}

TEST(RemoteUrl, CredentialsAndNonsenseAreRefused) {
  for (const char* bad : {"https://user:pw@host/x", "https://user@host/x", "ftp://host/x", "s3://B/x",
                          "s3://ab/x", "http:///x", "s3://bucket/x?versionId=1", "not a url"})
    EXPECT_THROW(parse_remote_url(bad), std::invalid_argument) << bad;
  EXPECT_THROW(parse_remote_url("http://h/x", "http://endpoint"), std::invalid_argument);
  EXPECT_THROW(parse_remote_url("s3://bucket/x", "ftp://endpoint"), std::invalid_argument);
  try {
    parse_remote_url("https://user:hunter2@host/x");
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos);
  }
}

TEST(RemoteUrl, MessagesShowNoUserPasswordOrQuery) {
  EXPECT_EQ(frame_for_messages("https://u:secret@host/x.b2nd?sig=abc"), "https://host/x.b2nd");
  EXPECT_EQ(frame_for_messages("s3://bucket/k"), "s3://bucket/k");
  EXPECT_EQ(frame_for_messages("/local/pa?th"), "/local/pa?th");
  EXPECT_EQ(percent_encode("a/b c~", true), "a/b%20c~");
  EXPECT_EQ(percent_encode("a/b", false), "a%2Fb");
}

TEST(Credentials, ProfilesOfTheAwsCredentialsFile) {
  const std::string text =
      "[default]\naws_access_key_id = AK1\naws_secret_access_key = SK1\n\n"
      "# a comment\n[other]\n aws_access_key_id=AK2 \naws_secret_access_key= SK2\naws_session_token = T2\n"
      "[half]\naws_access_key_id = AK3\n";
  auto d = parse_aws_credentials(text, "default");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->access_key, "AK1");
  EXPECT_EQ(d->secret_key, "SK1");
  auto o = parse_aws_credentials(text, "other");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->secret_key, "SK2");
  EXPECT_EQ(o->session_token, "T2");
  EXPECT_FALSE(parse_aws_credentials(text, "half"));
  EXPECT_FALSE(parse_aws_credentials(text, "missing"));
}

TEST(Credentials, HeaderFilesMustBeTheOwnersAloneAndHoldHeaders) {
  TempDir tmp;
  const auto path = tmp.path() / "headers";
  auto write = [&](const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
  };
  write("# token\nAuthorization: Bearer abc\r\n\nX-Extra:  v \n", 0600);
  EXPECT_EQ(read_header_file(path), (std::vector<std::string>{"Authorization: Bearer abc", "X-Extra: v"}));
  write("Authorization: Bearer abc\n", 0644);
  EXPECT_THROW(read_header_file(path), std::runtime_error);
  for (const char* bad : {"no colon here\n", ": empty name\n", "Bad Name: v\n", "A: b\x01\n"}) {
    write(bad, 0600);
    try {
      read_header_file(path);
      ADD_FAILURE() << bad;
    } catch (const std::runtime_error& e) {
      // The line is never quoted: it may hold the secret.
      EXPECT_EQ(std::string(e.what()).find("empty name"), std::string::npos);
    }
  }
  EXPECT_THROW(read_header_file(tmp.path() / "missing"), std::runtime_error);
}

TEST(S3Listing, PagesKeysTruncationAndWhatIsNotAListing) {
  const std::string page =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
      "<Prefix>set/</Prefix><IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken>"
      "<Contents><Key>set/a.b2nd</Key><Size>10</Size></Contents>"
      "<Contents><Key>set/d/../../etc</Key><Size>1</Size></Contents>"
      "<Contents><Key>set/x&amp;y.b2nd</Key></Contents></ListBucketResult>";
  S3ListingPage p = parse_s3_listing(page);
  EXPECT_EQ(p.keys, (std::vector<std::string>{"set/a.b2nd", "set/d/../../etc", "set/x&y.b2nd"}));
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.continuation, "tok+/=");
  EXPECT_THROW(parse_s3_listing("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
               std::runtime_error);
  EXPECT_THROW(parse_s3_listing("<Error><Code>AccessDenied</Code></Error>"), std::runtime_error);
  EXPECT_THROW(parse_s3_listing("<ListBucketResult><Contents>"), std::runtime_error);
  EXPECT_THROW(parse_s3_listing(""), std::runtime_error);
  EXPECT_THROW(parse_s3_listing("<ListBucketResult><Contents><Key>" + std::string(5000, 'k') +
                                "</Key></Contents></ListBucketResult>"),
               std::runtime_error);
  // Asked with encoding-type=url, keys come form-encoded.
  const std::string encoded =
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>set/a+b%2Bc%01%C3%A9.b2nd</Key></Contents></ListBucketResult>";
  EXPECT_EQ(parse_s3_listing(encoded).keys, (std::vector<std::string>{"set/a b+c\x01\xc3\xa9.b2nd"}));
  EXPECT_THROW(parse_s3_listing("<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>a%4</Key>"
                                "</Contents></ListBucketResult>"),
               std::runtime_error);
  // An entity that would expand a billion times is refused, not expanded.
  std::string laughs = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\">";
  const char* names = "abcdefghij";
  for (int i = 1; i < 10; ++i) {
    laughs += std::string("<!ENTITY ") + names[i] + " \"";
    for (int k = 0; k < 10; ++k) laughs += std::string("&") + names[i - 1] + ";";
    laughs += "\">";
  }
  laughs += "]><ListBucketResult><Contents><Key>&j;</Key></Contents></ListBucketResult>";
  EXPECT_THROW(parse_s3_listing(laughs), std::runtime_error);
}

std::shared_ptr<const Bytes> bytes_of(size_t n) { return std::make_shared<const Bytes>(n, uint8_t(7)); }

TEST(RangeCache, TheBudgetHoldsAndUnreadPrefetchIsKeptUntilRead) {
  RangeCache cache(100);
  const uint64_t a = cache.new_object(), b = cache.new_object();
  cache.insert(a, 0, bytes_of(40));
  cache.insert(b, 0, bytes_of(40));
  int64_t start = -1;
  ASSERT_TRUE(cache.find(a, 39, &start));
  EXPECT_EQ(start, 0);
  EXPECT_FALSE(cache.find(a, 40, &start));
  // Prefetch reservations: at most half the budget unread or in flight.
  EXPECT_TRUE(cache.reserve(30));
  EXPECT_FALSE(cache.reserve(30));
  cache.insert(a, 100, bytes_of(30), 30);  // evicts b's extent (read, least recent), not the new one
  EXPECT_LE(cache.held(), 100u);
  EXPECT_FALSE(cache.find(b, 0, &start));
  // A demand insert evicts read extents before the unread prefetched one.
  cache.insert(b, 0, bytes_of(50));
  EXPECT_LE(cache.held(), 100u);
  EXPECT_TRUE(cache.find(a, 110, &start));
  EXPECT_EQ(start, 100);
  cache.forget_object(a);
  EXPECT_FALSE(cache.find(a, 110, &start));
  EXPECT_EQ(cache.held(), 50u);
  EXPECT_FALSE(cache.reserve(60));
  cache.release(1000);  // never below zero
  EXPECT_EQ(cache.held(), 50u);
}

TEST(RangeCache, AnExtentIsChargedAllTheMemoryItsBufferHolds) {
  RangeCache cache(150);
  const uint64_t a = cache.new_object();
  Bytes roomy;
  roomy.reserve(100);
  roomy.assign(10, uint8_t(7));
  cache.insert(a, 0, std::make_shared<const Bytes>(std::move(roomy)));
  EXPECT_EQ(cache.held(), 100u);
  int64_t start = -1;
  EXPECT_FALSE(cache.find(a, 10, &start));  // its bytes, not its room, are what it covers
  cache.insert(a, 1000, bytes_of(60));      // 160 would exceed the budget: the first one goes
  EXPECT_EQ(cache.held(), 60u);
  EXPECT_FALSE(cache.find(a, 0, &start));
}

TEST(RangeCache, ABlockKeptUntilReadLeavesWhenReadToItsEnd) {
  RangeCache cache(100);
  const uint64_t a = cache.new_object();
  const auto block = bytes_of(20), other = bytes_of(20), kept = bytes_of(20);
  cache.insert_until_read(a, 0, block);
  cache.insert(a, 20, kept);
  int64_t start = -1;
  ASSERT_EQ(cache.find(a, 5, &start), block);
  cache.read_to_end(a, 0, other.get());  // not the extent held there: nothing leaves
  cache.read_to_end(a, 20, kept.get());  // kept until evicted: stays
  EXPECT_EQ(cache.held(), 40u);
  cache.read_to_end(a, 0, block.get());
  EXPECT_EQ(cache.held(), 20u);
  EXPECT_FALSE(cache.find(a, 5, &start));
  EXPECT_EQ(cache.find(a, 25, &start), kept);
}

}  // namespace
}  // namespace blosc2fs
