//===- StrictJson.cpp - JSON read as strictly as its formats say ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/StrictJson.h"
#include "zrt/InputFile.h"

#include <cerrno>
#include <cstdlib>
#include <set>

using namespace zrt;

namespace {

class Parser {
public:
  explicit Parser(std::string_view text) : s_(text) {}

  bool parse(JsonValue &out, std::string &error) {
    skipSpace();
    if (!value(out, 0, "the outermost object"))
      return error = error_, false;
    skipSpace();
    if (at_ != s_.size())
      return error = "unexpected text after the JSON value at byte " + std::to_string(at_),
             false;
    return true;
  }

private:
  bool fail(const std::string &what) {
    if (error_.empty())
      error_ = what + " at byte " + std::to_string(at_);
    return false;
  }
  void skipSpace() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word)
      return fail("not a JSON value");
    at_ += word.size();
    return true;
  }

  bool value(JsonValue &v, int depth, const std::string &where) {
    if (at_ >= s_.size())
      return fail("the text ends where a value should be");
    char c = s_[at_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth)
        return fail("it nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
                    " deep");
      return c == '{' ? object(v, depth + 1, where) : array(v, depth + 1, where);
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::String;
      return string(v.text);
    }
    if (c == 't' || c == 'f') {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      v.kind = JsonValue::Kind::Null;
      return literal("null");
    }
    return number(v);
  }

  bool object(JsonValue &v, int depth, const std::string &where) {
    v.kind = JsonValue::Kind::Object;
    ++at_;
    std::set<std::string> keys;
    skipSpace();
    if (at_ < s_.size() && s_[at_] == '}')
      return ++at_, true;
    while (true) {
      skipSpace();
      if (at_ >= s_.size() || s_[at_] != '"')
        return fail("an object's key is not a string");
      size_t keyAt = at_;
      std::string key;
      if (!string(key))
        return false;
      if (!keys.insert(key).second) {
        at_ = keyAt;
        return fail("key '" + key + "' appears twice in " + where);
      }
      skipSpace();
      if (at_ >= s_.size() || s_[at_] != ':')
        return fail("':' is missing after key '" + key + "'");
      ++at_;
      skipSpace();
      v.members.emplace_back(key, JsonValue{});
      if (!value(v.members.back().second, depth, "\"" + key + "\""))
        return false;
      skipSpace();
      if (at_ < s_.size() && s_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < s_.size() && s_[at_] == '}')
        return ++at_, true;
      return fail("an object is not closed (',' or '}' expected)");
    }
  }

  bool array(JsonValue &v, int depth, const std::string &where) {
    v.kind = JsonValue::Kind::Array;
    ++at_;
    skipSpace();
    if (at_ < s_.size() && s_[at_] == ']')
      return ++at_, true;
    std::string inner = "an array in " + where;
    while (true) {
      skipSpace();
      v.items.emplace_back();
      if (!value(v.items.back(), depth, inner))
        return false;
      skipSpace();
      if (at_ < s_.size() && s_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < s_.size() && s_[at_] == ']')
        return ++at_, true;
      return fail("an array is not closed (',' or ']' expected)");
    }
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += (char)cp;
    } else if (cp < 0x800) {
      out += (char)(0xc0 | cp >> 6);
      out += (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += (char)(0xe0 | cp >> 12);
      out += (char)(0x80 | (cp >> 6 & 0x3f));
      out += (char)(0x80 | (cp & 0x3f));
    } else {
      out += (char)(0xf0 | cp >> 18);
      out += (char)(0x80 | (cp >> 12 & 0x3f));
      out += (char)(0x80 | (cp >> 6 & 0x3f));
      out += (char)(0x80 | (cp & 0x3f));
    }
  }
  bool hex4(uint32_t &cp) {
    if (at_ + 4 > s_.size())
      return fail("a \\u escape is cut short");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[at_++];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0)
        return fail("a \\u escape has a character that is not hexadecimal");
      cp = cp << 4 | (uint32_t)d;
    }
    return true;
  }
  /// A string's value; escapes decoded, so that "a" and "\u0061" are one key.
  bool string(std::string &out) {
    ++at_; // the quote
    while (true) {
      if (at_ >= s_.size())
        return fail("a string is not closed");
      unsigned char c = (unsigned char)s_[at_++];
      if (c == '"')
        return true;
      if (c < 0x20)
        return fail("a string holds a control character");
      if (c != '\\') {
        out += (char)c;
        continue;
      }
      if (at_ >= s_.size())
        return fail("a string is not closed");
      char e = s_[at_++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(at_, 2) == "\\u") {
          at_ += 2;
          uint32_t low;
          if (!hex4(low))
            return false;
          if (low < 0xdc00 || low >= 0xe000)
            return fail("a \\u escape pairs a high surrogate with no low one");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        } else if (cp >= 0xd800 && cp < 0xe000) {
          return fail("a \\u escape is a lone surrogate");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --at_;
        return fail("a string has an unknown escape");
      }
    }
  }

  bool number(JsonValue &v) {
    size_t start = at_;
    if (at_ < s_.size() && s_[at_] == '-')
      ++at_;
    auto digits = [&] {
      size_t from = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9')
        ++at_;
      return at_ - from;
    };
    size_t first = at_;
    size_t whole = digits();
    if (whole == 0)
      return at_ = start, fail("not a JSON value");
    if (whole > 1 && s_[first] == '0')
      return at_ = start, fail("a number has a leading zero");
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      if (!digits())
        return fail("a number has no digits after its '.'");
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-'))
        ++at_;
      if (!digits())
        return fail("a number has no digits in its exponent");
    }
    v.kind = JsonValue::Kind::Number;
    v.text = std::string(s_.substr(start, at_ - start));
    return true;
  }

  std::string_view s_;
  size_t at_ = 0;
  std::string error_;
};

} // namespace

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &[k, v] : members)
    if (k == key)
      return &v;
  return nullptr;
}

std::optional<int64_t> JsonValue::integer() const {
  if (kind != Kind::Number || text.find_first_of(".eE") != std::string::npos)
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || !end || *end)
    return std::nullopt;
  return (int64_t)n;
}

const char *JsonValue::kindName(Kind k) {
  switch (k) {
  case Kind::Null: return "null";
  case Kind::Bool: return "a boolean";
  case Kind::Number: return "a number";
  case Kind::String: return "a string";
  case Kind::Array: return "an array";
  case Kind::Object: return "an object";
  }
  return "a value";
}

bool zrt::parseStrictJson(std::string_view text, JsonValue &out, std::string &error) {
  out = JsonValue{};
  return Parser(text).parse(out, error);
}
