//===- StrictJson.h - JSON read as strictly as its formats say -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The JSON files that cross a trust boundary (a safetensors header, a DeepSpeed
// config, a machine file) are read here first: RFC 8259's grammar, no duplicate
// key in an object (the parsers behind them keep the last silently, as "stage": 3,
// "stage": 1 compiled stage 1), nesting at most kMaxJsonDepth deep, and each
// number's text kept, so that a format's integer fields can refuse 1.0 and 1e3
// as the reference readers do. Errors name what is wrong and where.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_STRICTJSON_H
#define ZRT_STRICTJSON_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zrt {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text; ///< a string's value (unescaped), or a number as written
  std::vector<JsonValue> items;                            ///< an array's
  std::vector<std::pair<std::string, JsonValue>> members; ///< an object's, in order

  /// The member named `key`, or null.
  const JsonValue *find(std::string_view key) const;
  /// A number written as a whole number (digits, an optional leading '-'), within
  /// int64; none for 1.0, 1e3, a string or anything else.
  std::optional<int64_t> integer() const;
  /// What the kind is called in messages ("a string", "an object").
  static const char *kindName(Kind k);
};

/// Parses `text` as one JSON value; on failure returns false with `error` saying
/// what is wrong, where ("at byte 120"), and for a duplicate key which key in
/// which object ("key 'stage' appears twice in \"zero_optimization\"").
bool parseStrictJson(std::string_view text, JsonValue &out, std::string &error);

} // namespace zrt

#endif // ZRT_STRICTJSON_H
