// The strict parser of a safetensors header's JSON subset, and the string helpers it shares
// with the reader and writer in safetensors.cc.
#include "io/safetensors_json.h"

#include <cstdio>
#include <cstring>
#include <set>

namespace remat {
namespace safetensors_internal {

std::string quote(const std::string& s) {
  constexpr size_t kMaxShown = 64;
  std::string q = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      q += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      q += buf;
    }
  }
  if (s.size() > kMaxShown) q += "...";
  q += "'";
  return q;
}

size_t first_invalid_utf8(const unsigned char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
    }
    i += len;
  }
  return n;
}

namespace {

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xc0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xe0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// Parses exactly the JSON that a safetensors header may hold: one object whose values are
// tensor entries (an object with "dtype", "shape", "data_offsets") or the metadata object of
// strings. Anything else is an error at that byte. The grammar has a fixed depth (3), so the
// parser needs no recursion and deeply nested input fails at its first unexpected bracket.
class HeaderParser {
 public:
  HeaderParser(const char* text, size_t size, std::string* error)
      : text_(text), size_(size), error_(error) {}

  bool parse(std::vector<Entry>* entries,
             std::vector<std::pair<std::string, std::string>>* metadata) {
    std::set<std::string> names;
    bool have_metadata = false;
    skip_space();
    if (!expect('{', "at the start of the header")) return false;
    const bool ok = parse_members("the header", [&](const std::string& key) {
      if (key == kMetadataKey) {
        if (have_metadata) return fail("duplicate \"__metadata__\"");
        have_metadata = true;
        return parse_metadata(metadata);
      }
      if (!names.insert(key).second) return fail("duplicate tensor name " + quote(key));
      entries->emplace_back();
      entries->back().name = key;
      return parse_entry(&entries->back());
    });
    if (!ok) return false;
    skip_space();
    if (pos_ != size_) return fail("unexpected " + next_char() + " after the header object");
    return true;
  }

 private:
  bool fail(const std::string& what) {
    *error_ = "header byte " + std::to_string(pos_) + ": " + what;
    return false;
  }

  std::string next_char() const {
    if (pos_ >= size_) return "end of header";
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }

  void skip_space() {
    while (pos_ < size_ && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool expect(char c, const std::string& where) {
    skip_space();
    if (pos_ < size_ && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return fail(std::string("expected '") + c + "' " + where + ", found " + next_char());
  }

  // Parses the members of an object whose '{' was consumed, up to its '}', calling
  // |on_member| with each key once the ':' is consumed; |on_member| parses the value.
  template <typename OnMember>
  bool parse_members(const std::string& what, OnMember&& on_member) {
    skip_space();
    if (pos_ < size_ && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      std::string key;
      if (!parse_string(&key, "a key in " + what)) return false;
      if (!expect(':', "after key " + quote(key))) return false;
      if (!on_member(key)) return false;
      skip_space();
      if (pos_ < size_ && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      return expect('}', "or ',' after the value of " + quote(key) + " in " + what);
    }
  }

  bool parse_hex4(uint32_t* out) {
    if (size_ - pos_ < 4) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return fail("bad hex digit " + next_char() + " in \\u escape");
      }
      ++pos_;
    }
    *out = v;
    return true;
  }

  bool parse_string(std::string* out, const std::string& what) {
    skip_space();
    if (pos_ >= size_ || text_[pos_] != '"') {
      return fail("expected a string for " + what + ", found " + next_char());
    }
    ++pos_;
    out->clear();
    for (;;) {
      if (pos_ >= size_) return fail("unterminated string in " + what);
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("unescaped control character " + next_char() + " in " + what);
      if (c != '\\') {
        *out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= size_) return fail("unterminated string in " + what);
      const char e = text_[pos_];
      ++pos_;
      switch (e) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!parse_hex4(&cp)) return false;
          if (cp >= 0xdc00 && cp <= 0xdfff) return fail("lone low surrogate in " + what);
          if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t low;
            if (size_ - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
              return fail("high surrogate without a low one in " + what);
            }
            pos_ += 2;
            if (!parse_hex4(&low)) return false;
            if (low < 0xdc00 || low > 0xdfff) {
              return fail("high surrogate without a low one in " + what);
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(cp, out);
          break;
        }
        default: --pos_; return fail("bad escape '\\" + next_char() + "' in " + what);
      }
    }
  }

  // Accepts only what the format allows: a JSON integer in [0, 2^64). Fractions, exponents,
  // signs and leading zeros are reported with the text that was found.
  bool parse_uint(uint64_t* out, const std::string& what) {
    skip_space();
    const size_t start = pos_;
    while (pos_ < size_ && text_[pos_] != '\0' &&
           std::strchr("+-.eE0123456789", text_[pos_]) != nullptr) {
      ++pos_;
    }
    const std::string token(text_ + start, pos_ - start);
    pos_ = start;
    if (token.empty()) return fail("expected an integer for " + what + ", found " + next_char());
    const bool digits_only = token.find_first_not_of("0123456789") == std::string::npos;
    if (!digits_only || (token.size() > 1 && token[0] == '0')) {
      return fail(what + " must be a non-negative integer, found '" + token.substr(0, 32) + "'");
    }
    uint64_t v = 0;
    for (char c : token) {
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10)
        return fail(what + " " + token.substr(0, 32) + " does not fit in 64 bits");
      v = v * 10 + d;
    }
    pos_ += token.size();
    *out = v;
    return true;
  }

  bool parse_uint_array(std::vector<uint64_t>* out, const std::string& what) {
    if (!expect('[', "to start " + what)) return false;
    out->clear();
    skip_space();
    if (pos_ < size_ && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      uint64_t v;
      if (!parse_uint(&v, what + "[" + std::to_string(out->size()) + "]")) return false;
      out->push_back(v);
      skip_space();
      if (pos_ < size_ && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      return expect(']', "or ',' in " + what);
    }
  }

  bool parse_entry(Entry* entry) {
    const std::string where = "tensor " + quote(entry->name);
    if (!expect('{', "to start " + where)) return false;
    bool have_dtype = false, have_shape = false, have_offsets = false;
    const bool ok = parse_members(where, [&](const std::string& key) {
      bool* seen;
      if (key == "dtype") {
        seen = &have_dtype;
      } else if (key == "shape") {
        seen = &have_shape;
      } else if (key == "data_offsets") {
        seen = &have_offsets;
      } else {
        return fail(where + " has unknown field " + quote(key));
      }
      if (*seen) return fail(where + " has field " + quote(key) + " twice");
      *seen = true;
      if (key == "dtype") return parse_string(&entry->dtype, where + " dtype");
      if (key == "shape") return parse_uint_array(&entry->shape, where + " shape");
      std::vector<uint64_t> offsets;
      if (!parse_uint_array(&offsets, where + " data_offsets")) return false;
      if (offsets.size() != 2) {
        return fail(where + " data_offsets must have 2 values, found " +
                    std::to_string(offsets.size()));
      }
      entry->begin = offsets[0];
      entry->end = offsets[1];
      return true;
    });
    if (!ok) return false;
    if (!have_dtype) return fail(where + " has no \"dtype\"");
    if (!have_shape) return fail(where + " has no \"shape\"");
    if (!have_offsets) return fail(where + " has no \"data_offsets\"");
    return true;
  }

  bool parse_metadata(std::vector<std::pair<std::string, std::string>>* metadata) {
    if (!expect('{', "to start \"__metadata__\"")) return false;
    std::set<std::string> keys;
    return parse_members("\"__metadata__\"", [&](const std::string& key) {
      if (!keys.insert(key).second) return fail("duplicate __metadata__ key " + quote(key));
      std::string value;
      if (!parse_string(&value, "__metadata__ value of " + quote(key))) return false;
      metadata->emplace_back(key, std::move(value));
      return true;
    });
  }

  const char* text_;
  size_t size_;
  std::string* error_;
  size_t pos_ = 0;
};

}  // namespace

bool parse_header(const char* text, size_t size, std::vector<Entry>* entries,
                  std::vector<std::pair<std::string, std::string>>* metadata, std::string* error) {
  HeaderParser parser(text, size, error);
  return parser.parse(entries, metadata);
}

}  // namespace safetensors_internal
}  // namespace remat
