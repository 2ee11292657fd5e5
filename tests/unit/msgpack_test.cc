// msgpack <-> JSON: byte-identical round trips of what Python's msgpack writes.
#include "msgpack.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "fixtures.h"

namespace blosc2fs {
namespace {

using testing::hex_to_bytes;
using testing::TempDir;

std::string to_hex(ByteSpan b) {
  std::string s;
  char buf[3];
  for (uint8_t c : b) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    s += buf;
  }
  return s;
}

// Runs a Python script with /usr/bin/python3 (which has msgpack) and returns its stdout lines.
std::vector<std::string> run_python(const std::string& script) {
  TempDir dir;
  auto path = dir.path() / "gen.py";
  std::ofstream(path) << script;
  std::string cmd = "/usr/bin/python3 " + path.string();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  EXPECT_TRUE(pipe) << "cannot run " << cmd;
  std::vector<std::string> lines;
  std::string line;
  int c;
  while (pipe && (c = std::fgetc(pipe.get())) != EOF) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += char(c);
    }
  }
  return lines;
}

const char* kValuesScript = R"PY(
import msgpack, math
vals = [
  0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1,
  -1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**63,
  0.0, -0.0, 1.0, 1.5, -2.25, 0.1, 1e300, 1e-300, 5e-324, 123456789.125, 1e16, 2.0**53,
  float('nan'), float('inf'), float('-inf'),
  None, True, False,
  '', 'a', 'x' * 31, 'x' * 32, 'y' * 255, 'y' * 256, 'z' * 65535, 'z' * 65536, 'héllo wörld ✓ 𝄞',
  b'', b'\x00\xff', bytes(range(256)) * 1, b'q' * 256, b'r' * 65536,
  [], [1, 2, 3], list(range(15)), list(range(16)), list(range(70000)),
  {}, {'a': 1}, {str(i): i for i in range(15)}, {str(i): i for i in range(16)},
  {'k%05d' % i: i for i in range(70000)},
  {'z': 1, 'a': [1, {'b': None, 'c': [True, 1.0, 'x']}], 'm': {'n': {'o': -5}}},
  ('__tuple__', 1, 2),
  msgpack.ExtType(5, b'abc'), msgpack.Timestamp(1, 0), msgpack.Timestamp(2**33, 7), msgpack.Timestamp(2**40, 9), msgpack.ExtType(7, b'a'),
  msgpack.ExtType(8, b'ab'), msgpack.ExtType(9, b'abcd'), msgpack.ExtType(10, b'0123456789abcdef'),
  msgpack.ExtType(11, b''), msgpack.ExtType(12, b'e' * 300), msgpack.ExtType(13, b'f' * 70000),
  {'bytes': b'\x01\x02', 'float': 3.0, 'nested': [[[[]]]], 'neg': -1e-7},
  [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]],
]
for v in vals:
    print(msgpack.packb(v, use_bin_type=True).hex())
)PY";

TEST(Msgpack, RoundTripsEverythingPythonWrites) {
  auto lines = run_python(kValuesScript);
  ASSERT_GT(lines.size(), 60u);
  for (const std::string& hex : lines) {
    Bytes packed = hex_to_bytes(hex);
    auto json = msgpack_to_json(packed);
    ASSERT_TRUE(json) << "not decoded: " << hex.substr(0, 80);
    EXPECT_EQ(to_hex(json_to_msgpack(*json)), hex) << json->dump().substr(0, 200);
    // What attrs/ shows and takes back: the JSON text. (ordered_json parses big
    // objects in quadratic time, so the 70000-key map skips this step.)
    std::string text = json->dump(2);
    if (text.size() > (1 << 20)) continue;
    Json reparsed = Json::parse(text);
    EXPECT_EQ(to_hex(json_to_msgpack(reparsed)), hex) << json->dump().substr(0, 200);
  }
}

TEST(Msgpack, EncodesJsonTextLikePython) {
  const std::vector<std::string> texts = {
      R"({"a": 1, "b": [1.0, 2.5, -3, null, true, false], "c": {"d": "e"}})",
      R"([0, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, 18446744073709551615])",
      R"([-1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649, -9223372036854775808])",
      R"([0.1, 1e300, 1e-300, 1.0, -0.0, 123.456, 1E+2])",
      R"("a string that is longer than thirty-one bytes, definitely")",
      R"({"z": 0, "y": 1, "x": 2, "w": 3, "v": 4, "u": 5, "t": 6, "s": 7, "r": 8, "q": 9, "p": 10, "o": 11, "n": 12, "m": 13, "l": 14, "k": 15})",
  };
  std::string script = "import msgpack, json, sys\n";
  for (const auto& t : texts) script += "print(msgpack.packb(json.loads(r'''" + t + "'''), use_bin_type=True).hex())\n";
  auto lines = run_python(script);
  ASSERT_EQ(lines.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(to_hex(json_to_msgpack(Json::parse(texts[i]))), lines[i]) << texts[i];
}

TEST(Msgpack, SpecialRepresentations) {
  auto nan = msgpack_to_json(hex_to_bytes("cb7ff8000000000000"));
  ASSERT_TRUE(nan);
  EXPECT_EQ(nan->dump(), R"({"__float__":"nan"})");
  auto bin = msgpack_to_json(hex_to_bytes("c40300ff10"));
  ASSERT_TRUE(bin);
  EXPECT_EQ(bin->dump(), R"({"__bytes__":"AP8Q"})");
  auto ext = msgpack_to_json(hex_to_bytes("d40561"));
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->dump(), R"({"__ext__":[5,"YQ=="]})");
  // 1.0 stays a float through text.
  auto one = msgpack_to_json(hex_to_bytes("cb3ff0000000000000"));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->dump(), "1.0");
  EXPECT_EQ(to_hex(json_to_msgpack(Json::parse("1.0"))), "cb3ff0000000000000");
  EXPECT_EQ(to_hex(json_to_msgpack(Json::parse("1"))), "01");
  // A NaN with a payload keeps its bits.
  auto odd = msgpack_to_json(hex_to_bytes("cb7ff8000000000001"));
  ASSERT_TRUE(odd);
  EXPECT_EQ(to_hex(json_to_msgpack(*odd)), "cb7ff8000000000001");
  // float32 is read as a number.
  auto f32 = msgpack_to_json(hex_to_bytes("ca3fc00000"));
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->get<double>(), 1.5);
}

TEST(Msgpack, RejectsWhatIsNotOneJsonValue) {
  EXPECT_FALSE(msgpack_to_json({}));
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("0101")));                // trailing byte
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("a5616263")));            // truncated str
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("c1")));                  // never used
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("810102")));              // int key
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("82a16101a16102")));      // duplicate key
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("a2c328")));              // invalid UTF-8
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("ddffffffff01")));        // count beyond the data
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("dfffffffff")));
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("c6ffffffff00")));
  EXPECT_FALSE(msgpack_to_json(hex_to_bytes("81a95f5f62797465735f5fa0")));  // {"__bytes__": ""} is ambiguous
  Bytes deep(100, 0x91);
  deep.push_back(0x01);
  EXPECT_FALSE(msgpack_to_json(deep));
  Bytes ok(60, 0x91);
  ok.push_back(0x01);
  EXPECT_TRUE(msgpack_to_json(ok));
}

TEST(Msgpack, EncodingErrors) {
  EXPECT_THROW(json_to_msgpack(Json::parse(R"({"__bytes__": "not base64!"})")), FormatError);
  EXPECT_THROW(json_to_msgpack(Json::parse(R"({"__bytes__": "abc"})")), FormatError);
  EXPECT_THROW(json_to_msgpack(Json::parse(R"({"__float__": "banana"})")), FormatError);
  EXPECT_THROW(json_to_msgpack(Json::parse(R"({"__ext__": [300, ""]})")), FormatError);
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_THROW(json_to_msgpack(Json::parse(deep)), FormatError);
  // Keys named like the escapes but with other shapes are plain maps.
  EXPECT_EQ(to_hex(json_to_msgpack(Json::parse(R"({"__bytes__": 1})"))), "81a95f5f62797465735f5f01");
}

TEST(Msgpack, JsonTextIsOneValueAndNothingElse) {
  EXPECT_EQ(to_hex(json_text_to_msgpack(" {\"a\": [1, 2.5]}\n")),
            to_hex(json_to_msgpack(Json::parse(R"({"a": [1, 2.5]})"))));
  // The JSON parser alone stops at a NUL byte and would keep only {"a": 1}.
  const std::string with_nul("{\"a\": 1}\0and more", 17);
  try {
    json_text_to_msgpack(with_nul);
    ADD_FAILURE() << "a NUL byte was accepted";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "not valid JSON: NUL byte at offset 8");
  }
  EXPECT_THROW(json_text_to_msgpack("{\"a\": 1} 2"), FormatError);
  EXPECT_THROW(json_text_to_msgpack(""), FormatError);
  EXPECT_THROW(json_text_to_msgpack(R"({"__bytes__": "abc"})"), FormatError);
}

// Both directions and the attrs/ write-time check share one limit: at most
// kMsgpackMaxNesting containers, counting in JSON text the escape objects and
// the array inside __ext__.
TEST(Msgpack, NestingLimitIsTheSameBothWays) {
  auto nested = [](int levels, const Bytes& inner) {
    Bytes b(size_t(levels), 0x91);
    b.insert(b.end(), inner.begin(), inner.end());
    return b;
  };
  auto nested_text = [](int levels, const std::string& inner) {
    return std::string(size_t(levels), '[') + inner + std::string(size_t(levels), ']');
  };
  const int max = kMsgpackMaxNesting;
  EXPECT_TRUE(msgpack_to_json(nested(max, {0x01})));
  EXPECT_TRUE(msgpack_to_json(nested(max - 1, {0x90})));  // the 65th array is empty
  EXPECT_FALSE(msgpack_to_json(nested(max, {0x90})));
  EXPECT_FALSE(msgpack_to_json(nested(max + 1, {0x01})));
  EXPECT_NO_THROW(json_text_to_msgpack(nested_text(max, "1")));
  EXPECT_THROW(json_text_to_msgpack(nested_text(max + 1, "1")), FormatError);
  // bin inside 64 arrays is {"__bytes__": ...} inside 64 arrays: 65 levels of text.
  EXPECT_TRUE(msgpack_to_json(nested(max - 1, hex_to_bytes("c40100"))));
  EXPECT_FALSE(msgpack_to_json(nested(max, hex_to_bytes("c40100"))));
  EXPECT_FALSE(msgpack_to_json(nested(max, hex_to_bytes("cb7ff8000000000000"))));
  EXPECT_THROW(json_text_to_msgpack(nested_text(max, R"({"__bytes__": "AA=="})")), FormatError);
  // ext's text nests one more level.
  EXPECT_TRUE(msgpack_to_json(nested(max - 2, hex_to_bytes("d40561"))));
  EXPECT_FALSE(msgpack_to_json(nested(max - 1, hex_to_bytes("d40561"))));
  EXPECT_NO_THROW(json_text_to_msgpack(nested_text(max - 2, R"({"__ext__": [5, "YQ=="]})")));
  EXPECT_THROW(json_text_to_msgpack(nested_text(max - 1, R"({"__ext__": [5, "YQ=="]})")), FormatError);
  // Whatever decodes shows as text that encodes to the same bytes.
  for (int levels : {max - 2, max - 1, max}) {
    for (const char* inner : {"01", "90", "80", "c40100", "d40561", "cb7ff0000000000000"}) {
      const Bytes packed = nested(levels, hex_to_bytes(inner));
      if (auto json = msgpack_to_json(packed)) {
        EXPECT_EQ(json_text_to_msgpack(json->dump()), packed) << levels << inner;
      }
    }
  }
}

// Counts and lengths beyond what the input holds are refused before anything
// is allocated for them (msgpack-cxx would allocate an array's elements first).
TEST(Msgpack, HostileCountsAndLengths) {
  for (const char* hex : {"ddffffffff", "dd00010000" "01", "dfffffffff", "de0100" "a161",
                          "dbffffffff", "c6ffffffff", "c9ffffffff05", "c7ff05", "d9ff61"}) {
    EXPECT_FALSE(msgpack_to_json(hex_to_bytes(hex))) << hex;
  }
  // A million-element array of nil, the most one 1 MB input can hold.
  Bytes big = hex_to_bytes("dd000f4240");
  big.resize(big.size() + 1000000, 0xC0);
  auto json = msgpack_to_json(big);
  ASSERT_TRUE(json);
  EXPECT_EQ(json->size(), 1000000u);
  EXPECT_EQ(json_to_msgpack(*json), big);
}

}  // namespace
}  // namespace blosc2fs
