// Web directory indexes read as listings (src/remote/web_index.cc), without a
// server: the pages the Debian servers sent (tests/data/web-index, captured by
// its capture.py) and hostile pages. The servers themselves are in
// integration.test_web_index.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "error.h"
#include "web_index.h"

namespace blosc2fs {
namespace {

const std::string kPage = "http://127.0.0.1:8080/lake/";

std::string data_file(const std::string& name) {
  std::ifstream in(std::string(BLOSC2FS_TEST_DATA) + "/web-index/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "name" for a file, "name/" for a directory, in the parser's order.
std::vector<std::string> names(const std::vector<ListedEntry>& entries) {
  std::vector<std::string> out;
  for (const ListedEntry& e : entries) {
    EXPECT_EQ(e.size, -1) << e.name << ": a size taken from the page";
    EXPECT_TRUE(e.link_target.empty());
    out.push_back(e.name + (e.type == ListedEntry::Type::directory ? "/" : ""));
  }
  return out;
}

std::vector<std::string> links(const std::string& hrefs_html, const std::string& page = kPage) {
  return names(parse_web_index(hrefs_html, page, "text/html"));
}

// What capture.py serves in /lake/, sorted by name (bytes).
const std::vector<std::string> kLake = {
    "#hash.b2", "100%.txt", "README.md", "a b+c.b2nd",
    "a-name-longer-than-fifty-characters-that-nginx-cuts-in-text.b2nd", "held/", "q?.b2", "quote'd.b2frame",
    "sparse.b2nd/", "store.b2d/", "x&y<z>.csv", "\xC3\xBCn\xC3\xAF.b2nd"};

TEST(WebIndex, EveryServersPageListsTheSameEntries) {
  const std::vector<std::pair<std::string, std::string>> pages = {
      {"nginx.html", "text/html"},
      {"nginx.json", "application/json"},
      {"apache-table.html", "text/html;charset=ISO-8859-1"},
      {"apache-pre.html", "text/html;charset=ISO-8859-1"},
      {"apache-list.html", "text/html;charset=ISO-8859-1"},
      {"lighttpd.html", "text/html;charset=utf-8"},
      {"caddy.html", "text/html; charset=utf-8"},
      {"caddy.json", "application/json; charset=utf-8"},
      {"python-http-server.html", "text/html; charset=utf-8"},
  };
  for (const auto& [file, type] : pages) {
    const std::string body = data_file(file);
    EXPECT_EQ(names(parse_web_index(body, kPage, type)), kLake) << file;
    // Without a Content-Type the body tells: JSON starts with '['.
    EXPECT_EQ(names(parse_web_index(body, kPage)), kLake) << file << " without a Content-Type";
  }
}

TEST(WebIndex, FormatIsJsonByContentTypeOrLeadingBracket) {
  EXPECT_EQ(web_index_format("[]", ""), WebIndexFormat::json);
  EXPECT_EQ(web_index_format(" \r\n[{}]", "text/plain"), WebIndexFormat::json);
  EXPECT_EQ(web_index_format("\xEF\xBB\xBF[]", ""), WebIndexFormat::json);
  EXPECT_EQ(web_index_format("<html>", "Application/JSON; charset=utf-8"), WebIndexFormat::json);
  EXPECT_EQ(web_index_format("<html>[", "text/html"), WebIndexFormat::html);
  EXPECT_EQ(web_index_format("", ""), WebIndexFormat::html);
}

TEST(WebIndex, OnlyLinksDirectlyBelowThePageCount) {
  const std::string page = R"html(<pre>
<a href="../">../</a> <a href="/">Parent Directory</a> <a href="/lake/">self</a> <a href="./">self</a>
<a href="">empty</a> <a href=".">dot</a> <a href="..">dotdot</a> <a>no href</a> <a href>bare</a>
<a href="/lake/abs">absolute here</a> <a href="/other/x">absolute elsewhere</a> <a href="/lakeside/y">prefix</a>
<a href="http://127.0.0.1:8080/lake/full">same origin</a> <a href="HTTP://127.0.0.1:8080/lake/upper">case</a>
<a href="//127.0.0.1:8080/lake/netpath">network path</a> <a href="http://evil.example/lake/z">other host</a>
<a href="//evil.example/lake/z2">other host</a> <a href="https://127.0.0.1:8080/lake/tls">other scheme</a>
<a href="http://127.0.0.1:8081/lake/port">other port</a> <a href="http://user@127.0.0.1:8080/lake/u">userinfo</a>
<a href="?C=N;O=D">sort</a> <a href="x?y">query</a> <a href="#top">fragment</a> <a href="f#x">fragment</a>
<a href="mailto:a@b.c">mail</a> <a href="javascript:alert(1)">js</a> <a href="data:text/html,hi">data</a>
<a href="http:rel">scheme, relative</a> <a href="ftp://127.0.0.1:8080/lake/ftp">ftp</a>
<a href="sub/deeper">two deep</a> <a href="sub/deeper/">two deep</a> <a href="dir//">empty part</a>
<a href="../../../../etc/passwd">out</a> <a href="../lake/back-in">back in</a> <a href="x/../resolved">dots</a>
<a href="file">a file</a> <a href="dir/">a directory</a>
</pre>)html";
  EXPECT_EQ(links(page), (std::vector<std::string>{"abs", "back-in", "dir/", "file", "full", "netpath",
                                                   "resolved", "upper"}));
}

TEST(WebIndex, DefaultPortsAreTheSameOrigin) {
  EXPECT_EQ(links(R"html(<a href="http://h/d/a">a</a><a href="http://H:80/d/b">b</a><a href="https://h/d/c">c</a>)html",
                  "http://h:80/d/"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(links(R"html(<a href="https://h:443/d/a">a</a><a href="http://h/d/b">b</a>)html", "https://h/d/"),
            (std::vector<std::string>{"a"}));
}

TEST(WebIndex, NamesArePercentDecodedOnceAndChecked) {
  const std::string page = R"html(
<a href="a%2Fb">encoded slash</a> <a href="a%2fb/">encoded slash, directory</a> <a href="%00x">NUL</a>
<a href="x%00">NUL</a> <a href="%2E%2E/">dots</a> <a href="%2e">dot</a> <a href="%2E%2E">dots</a>
<a href="..%2F..%2Fetc">dots and slashes</a> <a href="%2e%2e%2f">dots, slash</a> <a href="bad%ZZ">bad escape</a>
<a href="bad%2">short escape</a> <a href="%25252F">twice encoded</a> <a href="sp%20ace+plus">space</a>
<a href="%C3%A9t%C3%A9/">utf-8</a> <a href="raw space">raw</a>
)html";
  EXPECT_EQ(links(page), (std::vector<std::string>{"%252F", "raw space", "sp ace+plus", "\xC3\xA9t\xC3\xA9/"}));
}

TEST(WebIndex, EntitiesDecodeBeforeTheLinkIsResolved) {
  const std::string page = R"html(
<a href="&#46;&#46;/">entity dots</a> <a href="&#x2F;etc/">entity slash</a> <a href="a&#47;b">entity slash</a>
<a href="&#37;2F">entity percent</a> <a href="&#37;2541">entity percent twice</a> <a href="x&amp;y">amp</a>
<a href="&lt;tag&gt;">lt gt</a> <a href="&quot;q&quot;">quote</a> <a href="&#0;nul">NUL</a>
<a href="&#10;newline">control</a> <a href="tab&#9;in">control</a> <a href="&#x3F;query">query</a>
<a href="&#35;frag">fragment</a> <a href="&nbsp;lead">nbsp</a>
)html";
  // A leading or trailing newline is white space around the URL, cut as a browser does.
  EXPECT_EQ(links(page), (std::vector<std::string>{"\"q\"", "%41", "<tag>", "newline", "x&y", "\xC2\xA0lead"}));
}

TEST(WebIndex, WhiteSpaceAroundHrefIsCutAndTheFirstHrefCounts) {
  EXPECT_EQ(links("<a href=\"  held/ \n\">x</a><A HREF=\"Upper\">y</A><a href=\"first\" href=\"../\">z</a>"),
            (std::vector<std::string>{"Upper", "first", "held/"}));
}

TEST(WebIndex, ANameListedTwiceIsOneEntryADirectoryWhenEitherSaysSo) {
  EXPECT_EQ(links(R"html(<a href="a"><img></a><a href="a">a</a><a href="b">b</a><a href="b/">b/</a>)html"),
            (std::vector<std::string>{"a", "b/"}));
}

TEST(WebIndex, OnlyAnchorsAreLinksAndBaseIsIgnored) {
  const std::string page = R"html(<html><head><base href="http://evil.example/"><link href="style.css">
<script>document.write('<a href="scripted">')</script></head><body><!-- <a href="commented"> -->
<img src="img.png"><area href="area"><form action="form"></form><a href="real">real</a></body></html>)html";
  EXPECT_EQ(links(page), (std::vector<std::string>{"real"}));
}

TEST(WebIndex, MalformedPagesGiveWhatTheyLinkNeverACrash) {
  EXPECT_EQ(links("<a href=\"one\"<<><a href=\"two\">"), (std::vector<std::string>{"one", "two"}));
  // A tag the page ends inside is no tag (the standard's eof-in-tag).
  EXPECT_EQ(links("<a href=unquoted>x</a><a href='single'>y</a><a href=\"unterminated"),
            (std::vector<std::string>{"single", "unquoted"}));
  // A NUL byte is text like any other: what follows still lists; one inside an href drops it.
  const char binary[] = "\x01\x80\x81<a href=\"bin\">\x01\x80</a>\0<a href=\"after-nul\"><a href=\"in\0side\">";
  EXPECT_EQ(links(std::string(binary, sizeof binary - 1)), (std::vector<std::string>{"after-nul", "bin"}));
  // A DOCTYPE is read up to its first '>', its "entities" are nothing.
  EXPECT_EQ(links("<!DOCTYPE x [<!ENTITY e \"boom\">]><a href=\"&e;\">x</a><a href=\"ok\">ok</a>"),
            (std::vector<std::string>{"ok"}));
  EXPECT_TRUE(links("").empty());
  EXPECT_TRUE(links("not html at all").empty());
  EXPECT_TRUE(links("</a></a></pre></body></html>").empty());
  EXPECT_TRUE(links("<").empty());
  EXPECT_TRUE(links("<a href=\"x\"").empty());
  EXPECT_TRUE(links("<!--").empty());
  EXPECT_TRUE(links("<a href=\"&#").empty());
  EXPECT_TRUE(links("<a href=&").empty());
}

TEST(WebIndex, TagsAreTokenizedAsTheStandardSays) {
  // Attribute syntax: no value, unquoted, '/' between attributes, upper case, later duplicates.
  EXPECT_EQ(links("<a download href=plain>.</a><a/href=\"slash\">.</a><A\nHREF\n=\n'spaced'>.</A>"
                  "<a hrefx=\"no\" xhref=\"no\" data-href=\"no\">.</a><a title=\"href=no\">.</a>"
                  "<a href=\"self-closing\"/><a href=unquoted/>.</a>"),
            (std::vector<std::string>{"plain", "self-closing", "slash", "spaced", "unquoted/"}));
  // End tags carry no links.
  EXPECT_TRUE(links("</a href=\"end\">").empty());
  // Comments end where the standard ends them: "-->", "--!>", and the abrupt "<!-->", "<!--->";
  // "<?", "<!x" and CDATA outside SVG/MathML are bogus comments, up to the first '>'.
  EXPECT_EQ(links("<!-- <a href=\"c1\"> --><a href=\"a1\"><!-- x --!><a href=\"a2\"><!--><a href=\"a3\">"
                  "<!---><a href=\"a4\"><!-- -- > <a href=\"c2\"> ---><a href=\"a5\"><? pi ><a href=\"a6\">"
                  "<!not a comment><a href=\"a7\"><![CDATA[ <a href=\"c3\"> ]]>"),
            (std::vector<std::string>{"a1", "a2", "a3", "a4", "a5", "a6", "a7"}));
  // Raw-text elements hold text up to their own end tag, in any case; <plaintext> to the end.
  EXPECT_EQ(links("<script>x = '<a href=\"s1\">'; '</scripts>'</SCRIPT ><a href=\"after-script\">"
                  "<style><a href=\"s2\"></style/><a href=\"after-style\">"
                  "<textarea><a href=\"s3\"></textarea><a href=\"after-textarea\">"
                  "<title><a href=\"s4\"></title><a href=\"after-title\"><plaintext></plaintext><a href=\"s5\">"),
            (std::vector<std::string>{"after-script", "after-style", "after-textarea", "after-title"}));
  EXPECT_TRUE(links("<script><a href=\"unclosed\">").empty());
}

TEST(WebIndex, OnlyTheReferencesServersWriteDecodeOthersDropTheLink) {
  // Legacy forms without ';' decode, except before '=' (text of a query, as the standard says).
  EXPECT_EQ(links("<a href=\"a&amp.b\">.</a><a href=\"c&AMP;d\">.</a><a href=\"e&apos;f\">.</a>"
                  "<a href=\"g&#x27;h\">.</a><a href=\"i&#39j\">.</a><a href=\"k&=l\">.</a><a href=\"m&n=o\">.</a>"
                  "<a href=\"p&\">.</a>"),
            (std::vector<std::string>{"a&.b", "c&d", "e'f", "g'h", "i'j", "k&=l", "m&n=o", "p&"}));
  // A name we do not know (a browser knows 2,231), a legacy form HTML has not, a known name run
  // into letters ("&ampb": a browser keeps it as text), NUL, a surrogate, a C1 control, past U+10FFFF: dropped.
  EXPECT_TRUE(links("<a href=\"&eacute;\">.</a><a href=\"x&copy\">.</a><a href=\"&aposx\">.</a><a href=\"a&ampb\">.</a>"
                    "<a href=\"&#x0;\">.</a><a href=\"&#xD800;\">.</a><a href=\"&#x80;\">.</a>"
                    "<a href=\"&#x110000;\">.</a><a href=\"&#99999999999999999999;\">.</a>")
                  .empty());
  EXPECT_EQ(links("<a href=\"&#x1F600;\">.</a><a href=\"&#233;t&#xE9;\">.</a>"),
            (std::vector<std::string>{"\xC3\xA9t\xC3\xA9", "\xF0\x9F\x98\x80"}));
  // References in other attributes and in text cost nothing and change nothing.
  EXPECT_EQ(links("<a title=\"&eacute;&#0;\" href=\"ok\">&eacute;&#0;</a>"), (std::vector<std::string>{"ok"}));
}

TEST(WebIndex, DeepNestingCostsNothing) {
  // No tree is built: a million nested elements are a million tags read one after the other.
  std::string page;
  for (int i = 0; i < 1'000'000; ++i) page += "<div>";
  page += "<a href=\"deep\">deep</a>";
  EXPECT_EQ(links(page), (std::vector<std::string>{"deep"}));
}

TEST(WebIndex, TwoMillionEntriesAreRefusedWithOneLine) {
  std::string page = "<html><body><pre>\n";
  page.reserve(2'000'000 * 20);
  char line[64];
  for (int i = 0; i < 2'000'000; ++i) {
    std::snprintf(line, sizeof line, "<a href=\"%07d\">\n", i);
    page += line;
  }
  ASSERT_LT(page.size(), kMaxIndexPageBytes);
  try {
    parse_web_index(page, kPage, "text/html");
    FAIL() << "an index of 2,000,000 entries was taken";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), kPage + ": a directory index of more than 1,000,000 entries: refused");
  }
  // The same in JSON.
  std::string json = "[";
  json.reserve(2'000'000 * 36);
  for (int i = 0; i < 2'000'000; ++i) {
    std::snprintf(line, sizeof line, "%s{\"name\":\"%07d\",\"type\":\"file\"}", i ? "," : "", i);
    json += line;
  }
  json += "]";
  try {
    parse_web_index(json, kPage, "application/json");
    FAIL() << "a JSON index of 2,000,000 entries was taken";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), kPage + ": a directory index of more than 1,000,000 entries: refused");
  }
}

TEST(WebIndex, APageOver64MiBIsRefusedWithOneLine) {
  const std::string page(kMaxIndexPageBytes + 1, ' ');
  try {
    parse_web_index(page, kPage, "text/html");
    FAIL() << "a page over 64 MiB was parsed";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), kPage + ": a directory index page over 64 MiB: refused");
  }
}

TEST(WebIndex, JsonNamesAreCheckedNotDecoded) {
  const std::string json = R"html([
{"name":"a/b","type":"file"}, {"name":"..","type":"directory"}, {"name":".","type":"directory"},
{"name":"","type":"file"}, {"name":"x\u0000y","type":"file"}, {"name":"sock","type":"other"},
{"name":"%2F","type":"file"}, {"name":"d","type":"directory","size":12}, {"type":"file"},
{"name":"caddy-dir/","is_dir":true,"size":4096}, {"name":"caddy-file","is_dir":false,"size":3},
{"name":"untyped"}, {"name":5,"type":"file"}, {"name":"dup","type":"file"}, {"name":"dup","type":"directory"}
])html";
  EXPECT_EQ(names(parse_web_index(json, kPage, "application/json")),
            (std::vector<std::string>{"%2F", "caddy-dir/", "caddy-file", "d/", "dup/"}));
  EXPECT_TRUE(parse_web_index("[]", kPage).empty());
}

TEST(WebIndex, JsonThatIsNoIndexIsRefused) {
  for (const char* json : {"{\"name\":\"a\"}", "[1,2]", "[{\"name\":{\"x\":1}}]", "[[{}]]", "[{\"name\":\"a\",",
                           "[] []", "[{\"name\":\"a\",\"type\":\"file\"}] trailing", "[\"a\"]", "[{\"a\":[1]}]"}) {
    try {
      parse_web_index(json, kPage, "application/json");
      ADD_FAILURE() << json << " was taken as an index";
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(kPage + ": the JSON answer is not a directory index", 0), 0u) << e.what();
    }
  }
  // Deep JSON is refused at the third level, not recursed into.
  std::string deep(100000, '[');
  EXPECT_THROW(parse_web_index(deep, kPage, "application/json"), FormatError);
}

TEST(WebIndex, ThePagesQueryAndFileNameAreNotItsDirectory) {
  // Links resolve against the directory the page lists, whatever follows it.
  EXPECT_EQ(links(R"html(<a href="a">a</a><a href="/d/b">b</a>)html", "http://h/d/?token=x"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(links(R"html(<a href="a">a</a>)html", "http://h/d/index.html"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(links(R"html(<a href="a">a</a><a href="/b">b</a><a href="/x/c">c</a>)html", "http://h"),
            (std::vector<std::string>{"a", "b"}));
  // A directory whose own name is encoded compares decoded.
  EXPECT_EQ(links(R"html(<a href="/a%20b/x">x</a><a href="/a b/y">y</a><a href="/a+b/z">z</a>)html", "http://h/a%20b/"),
            (std::vector<std::string>{"x", "y"}));
}

}  // namespace
}  // namespace blosc2fs
