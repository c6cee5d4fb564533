// JSON string literals (json_text.h).
#include "cli/json_text.h"

#include <cstdio>

namespace remat {
namespace cli {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\u%04x", c);
      out += b;
    } else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string json_string(const char* text) { return json_string(std::string(text ? text : "")); }

}  // namespace cli
}  // namespace remat
