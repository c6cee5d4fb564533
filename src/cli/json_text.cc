// JSON string literals (json_text.h).
#include "cli/json_text.h"

#include <cstdio>

namespace remat {
namespace cli {

namespace {

// Length of the well-formed UTF-8 sequence at |p| (|n| bytes left), or 0 when the bytes there
// are not one (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
size_t utf8_sequence(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  return len;
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\u%04x", c);
      out += b;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t len = utf8_sequence(p + i, text.size() - i)) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\\ufffd";  // a byte that is not UTF-8: JSON text must be
      ++i;
    }
  }
  return out + "\"";
}

std::string json_string(const char* text) { return json_string(std::string(text ? text : "")); }

}  // namespace cli
}  // namespace remat
