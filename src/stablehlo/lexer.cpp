#include "stablehlo/lexer.h"

#include <cctype>

namespace tessera::stablehlo {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

Lexer::Lexer(std::string_view text, std::string file, int first_line)
    : text_(text), file_(std::move(file)) {
  loc_.line = first_line;
}

char Lexer::raw(size_t ahead) const {
  size_t i = loc_.offset + ahead;
  return i < text_.size() ? text_[i] : '\0';
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && loc_.offset < text_.size(); ++i) {
    if (text_[loc_.offset] == '\n') {
      ++loc_.line;
      loc_.column = 1;
    } else {
      ++loc_.column;
    }
    ++loc_.offset;
  }
}

void Lexer::skip_space() {
  for (;;) {
    char c = raw();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '/' && raw(1) == '/') {
      while (raw() != '\n' && raw() != '\0') advance();
    } else if (c == 'l' && text_.substr(loc_.offset, 4) == "loc(" &&
               (loc_.offset == 0 || !is_identifier_char(text_[loc_.offset - 1]))) {
      // Source locations, loc(...), carry nothing Tessera keeps: they read as space.
      advance(4);
      balanced_until(')');
    } else {
      return;
    }
  }
}

bool Lexer::at_end() {
  skip_space();
  return loc_.offset >= text_.size();
}

char Lexer::peek() {
  skip_space();
  return raw();
}

bool Lexer::try_consume(std::string_view token) {
  skip_space();
  if (text_.substr(loc_.offset, token.size()) != token) return false;
  if (is_identifier_char(token.back()) && is_identifier_char(raw(token.size()))) return false;
  advance(token.size());
  return true;
}

void Lexer::expect(std::string_view token) {
  if (try_consume(token)) return;
  if (at_end()) error(fmt::format("expected '{}', but the input ends", token));
  std::string next;
  for (size_t i = 0; i < 12 && raw(i) != '\0' && raw(i) != '\n'; ++i) next += raw(i);
  error(fmt::format("expected '{}', found '{}'", token, next));
}

std::string Lexer::identifier() {
  skip_space();
  char c = raw();
  if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_'))
    error(at_end() ? "expected an identifier, but the input ends" : "expected an identifier");
  std::string out;
  while (is_identifier_char(raw())) {
    out += raw();
    advance();
  }
  return out;
}

std::string Lexer::suffix_id() {
  if (raw() == '"') return string_literal();
  std::string out;
  while (is_identifier_char(raw()) || raw() == '-') {
    out += raw();
    advance();
  }
  if (out.empty()) error("expected a name");
  return out;
}

bool Lexer::is_number_next() {
  skip_space();
  char c = raw();
  if (c == '-' || c == '+') c = raw(1);
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

std::string Lexer::number_text() {
  if (!is_number_next()) error("expected a number");
  std::string out;
  if (raw() == '-' || raw() == '+') {
    out += raw();
    advance();
  }
  if (raw() == '0' && (raw(1) == 'x' || raw(1) == 'X')) {
    out += "0x";
    advance(2);
    while (std::isxdigit(static_cast<unsigned char>(raw()))) {
      out += raw();
      advance();
    }
    return out;
  }
  auto digits = [&] {
    while (std::isdigit(static_cast<unsigned char>(raw()))) {
      out += raw();
      advance();
    }
  };
  digits();
  if (raw() == '.') {
    out += '.';
    advance();
    digits();
  }
  if ((raw() == 'e' || raw() == 'E') &&
      (std::isdigit(static_cast<unsigned char>(raw(1))) ||
       ((raw(1) == '-' || raw(1) == '+') && std::isdigit(static_cast<unsigned char>(raw(2)))))) {
    out += raw();
    advance();
    if (raw() == '-' || raw() == '+') {
      out += raw();
      advance();
    }
    digits();
  }
  return out;
}

int64_t Lexer::integer() {
  Location start = loc_;
  std::string t = number_text();
  if (t.find_first_of(".eE") != std::string::npos && t.find("0x") == std::string::npos)
    error_at(start, fmt::format("expected an integer, found '{}'", t));
  try {
    bool negative = t[0] == '-';
    std::string body = (t[0] == '-' || t[0] == '+') ? t.substr(1) : t;
    uint64_t v = body.rfind("0x", 0) == 0 ? std::stoull(body.substr(2), nullptr, 16)
                                          : std::stoull(body, nullptr, 10);
    return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  } catch (const std::exception&) {
    error_at(start, fmt::format("integer '{}' is out of range", t));
  }
}

std::string Lexer::string_token() {
  skip_space();
  if (raw() != '"') error("expected a string");
  Location start = loc_;
  std::string out = "\"";
  advance();
  while (raw() != '"') {
    if (raw() == '\0' || raw() == '\n') error_at(start, "unterminated string");
    if (raw() == '\\' && raw(1) != '\0') {
      out += raw();
      advance();
    }
    out += raw();
    advance();
  }
  advance();
  return out + "\"";
}

std::string Lexer::string_literal() {
  skip_space();
  Location start = loc_;
  std::string token = string_token();
  // MLIR's escapes: \\ \" \n \t and \XX (two hex digits, one byte).
  std::string out;
  for (size_t i = 1; i + 1 < token.size(); ++i) {
    if (token[i] != '\\') {
      out += token[i];
      continue;
    }
    char e = token[++i];
    if (e == '\\' || e == '"') {
      out += e;
    } else if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (i + 1 < token.size() - 1 && std::isxdigit(static_cast<unsigned char>(e)) &&
               std::isxdigit(static_cast<unsigned char>(token[i + 1]))) {
      out += static_cast<char>(std::stoi(token.substr(i, 2), nullptr, 16));
      ++i;
    } else {
      error_at(start, fmt::format("unknown escape '\\{}' in a string", e));
    }
  }
  return out;
}

std::string Lexer::balanced_until(char close) {
  std::string stack(1, close);
  std::string out;
  Location start = loc_;
  while (!stack.empty()) {
    char c = raw();
    if (c == '\0') error_at(start, fmt::format("unterminated '{}'", close));
    if (c == '"') {
      out += string_token();
      continue;
    }
    advance();
    if (c == stack.back()) {
      stack.pop_back();
      if (stack.empty()) {
        out += c;
        break;
      }
    } else if (c == '(') {
      stack += ')';
    } else if (c == '[') {
      stack += ']';
    } else if (c == '{') {
      stack += '}';
    } else if (c == '<') {
      stack += '>';
    } else if ((c == ')' || c == ']' || c == '}') ) {
      error(fmt::format("unbalanced '{}'", c));
    } else if (c == '-' && raw() == '>') {  // the arrow of a function type is not a bracket
      out += c;
      c = raw();
      advance();
    }
    out += c;
  }
  return out;
}

void Lexer::error_at(Location l, const std::string& message) const {
  throw ParseError(file_, l.line, l.column, message);
}

}  // namespace tessera::stablehlo
