// A character cursor over StableHLO text, with the token readers the parser needs.
//
// MLIR's syntax is context-sensitive (`2x3xf32` inside tensor<...> is three tokens, elsewhere an
// identifier), so instead of a separate token stream the parser reads from this cursor and asks
// for the token it expects next. Every position knows its line and column, and every error is a
// ParseError "file:line:col: message".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/error.h"

namespace tessera::ir {
class Module;
}

namespace tessera::stablehlo {

class ParseError : public support::UserError {
 public:
  ParseError(const std::string& file, int line, int column, const std::string& message)
      : support::UserError(fmt::format("{}:{}:{}: {}", file, line, column, message)),
        line(line), column(column) {}
  int line, column;
};

struct Location {
  size_t offset = 0;
  int line = 1, column = 1;
};

class Lexer {
 public:
  Lexer(std::string_view text, std::string file, int first_line = 1);

  // Skips whitespace and // comments.
  void skip_space();
  bool at_end();
  // The next non-space character, or '\0' at the end.
  char peek();
  // Consumes `token` if it comes next. A token that ends in an identifier character only
  // matches when no identifier character follows (so "dim" does not match "dims").
  bool try_consume(std::string_view token);
  void expect(std::string_view token);
  // A comma-separated list, possibly empty, up to and including `close` (its opening bracket
  // already consumed): `item` reads one element.
  template <class Item>
  void list_until(std::string_view close, Item item) {
    if (try_consume(close)) return;
    do item();
    while (try_consume(","));
    expect(close);
  }

  std::string identifier();   // [A-Za-z_][A-Za-z0-9_.$]*
  std::string suffix_id();    // after % @ ^: [A-Za-z0-9_.$-]+ (or a quoted string)
  int64_t integer();          // decimal or 0x hex, optionally negative
  bool is_number_next();
  std::string number_text();  // a numeric literal's text: -1, 2.5e-3, 0x7FC00000
  std::string string_literal();  // the string's value, escapes decoded
  std::string string_token();    // the string as written, quotes and escapes included
  // Text up to and including the matching close bracket of the open bracket just consumed, for
  // attributes kept verbatim. Handles nesting of (), [], {}, <> and strings.
  std::string balanced_until(char close);

  // Moves over n characters of the current line as they are (no space skipping).
  void advance_raw(size_t n) { advance(n); }

  Location location() const { return loc_; }
  void reset(Location l) { loc_ = l; }
  const std::string& file() const { return file_; }
  std::string_view rest() const { return text_.substr(loc_.offset); }

  // The module being read, where a mesh written inline in a sharding (`#sdy.sharding<mesh<[...]>,
  // ...>`) is declared (null where the text is no module's: such a mesh is refused).
  ir::Module* module = nullptr;

  [[noreturn]] void error(const std::string& message) const { error_at(loc_, message); }
  [[noreturn]] void error_at(Location l, const std::string& message) const;

  // Nesting (regions in regions, lists in lists) is bounded, so hostile text cannot overflow the
  // parser's stack: a NestingGuard per recursive step, an error past kMaxNesting levels.
  static constexpr int kMaxNesting = 200;
  class NestingGuard {
   public:
    NestingGuard(Lexer& lx, std::string_view what) : lx_(lx) {
      if (++lx_.nesting_ > kMaxNesting)
        lx_.error(fmt::format("{} nested more than {} levels deep", what, kMaxNesting));
    }
    ~NestingGuard() { --lx_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Lexer& lx_;
  };

 private:
  char raw(size_t ahead = 0) const;
  void advance(size_t n = 1);

  std::string_view text_;
  std::string file_;
  Location loc_;
  int nesting_ = 0;
};

bool is_identifier_char(char c);

}  // namespace tessera::stablehlo
