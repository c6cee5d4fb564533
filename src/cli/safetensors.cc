// Safetensors reading and writing: a strict parser for the header's JSON subset, a validator
// of the data layout, and a canonical writer.
#include "cli/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace remat {
namespace {

constexpr size_t kLengthBytes = 8;
constexpr char kMetadataKey[] = "__metadata__";

struct DtypeInfo {
  const char* name;
  size_t size;
};

// The byte-sized dtypes of the reference implementation; the sub-byte ones (F4, F6_*) are
// left out because numel * itemsize does not describe their layout.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
    {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8},
};

// Quotes |s| for an error message. Names come from untrusted files: non-printable bytes are
// escaped and long names cut, so a hostile name cannot garble or flood the message.
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

template <typename T>
std::string list_string(const std::vector<T>& values, const char* separator = ", ") {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += separator;
    s += std::to_string(values[i]);
  }
  return s + "]";
}

// Returns the index of the first byte of |s| that is not part of valid UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF are invalid), or |n| when all of it is valid.
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

// One header entry before its offsets are checked against the data buffer.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

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
        default:
          --pos_;
          return fail("bad escape '\\" + next_char() + "' in " + what);
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
      return fail(what + " must be a non-negative integer, found '" +
                  token.substr(0, 32) + "'");
    }
    uint64_t v = 0;
    for (char c : token) {
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) return fail(what + " " + token.substr(0, 32) +
                                                 " does not fit in 64 bits");
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

// Checks each entry's dtype and size, then that the entries tile [0, |data_size|) exactly,
// which is what the reference implementation requires.
bool validate_layout(const std::vector<Entry>& entries, uint64_t data_size, std::string* error) {
  for (const Entry& e : entries) {
    const std::string where = "tensor " + quote(e.name);
    const size_t item = safetensors_dtype_size(e.dtype);
    if (item == 0) {
      *error = where + " has unknown dtype " + quote(e.dtype);
      return false;
    }
    if (e.end < e.begin) {
      *error = where + " has data_offsets [" + std::to_string(e.begin) + ", " +
               std::to_string(e.end) + "] with end before begin";
      return false;
    }
    if (e.end > data_size) {
      *error = where + " has data_offsets [" + std::to_string(e.begin) + ", " +
               std::to_string(e.end) + "] past the end of the " + std::to_string(data_size) +
               "-byte data buffer";
      return false;
    }
    uint64_t bytes = item;
    for (uint64_t d : e.shape) {
      if (d > INT64_MAX || __builtin_mul_overflow(bytes, d, &bytes)) {
        *error = where + " shape " + list_string(e.shape) + " overflows 64 bits";
        return false;
      }
    }
    if (bytes != e.end - e.begin) {
      *error = where + " has data_offsets [" + std::to_string(e.begin) + ", " +
               std::to_string(e.end) + "] (" + std::to_string(e.end - e.begin) +
               " bytes) but dtype " + e.dtype + " and shape " + list_string(e.shape) +
               " need " + std::to_string(bytes);
      return false;
    }
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    if (e->begin < cursor) {
      *error = "tensor " + quote(e->name) + " data_offsets [" + std::to_string(e->begin) +
               ", " + std::to_string(e->end) + "] overlap tensor " + quote(previous->name) +
               " [" + std::to_string(previous->begin) + ", " + std::to_string(previous->end) +
               "]";
      return false;
    }
    if (e->begin > cursor) {
      *error = "data bytes [" + std::to_string(cursor) + ", " + std::to_string(e->begin) +
               ") belong to no tensor (gap before tensor " + quote(e->name) + ")";
      return false;
    }
    cursor = e->end;
    previous = e;
  }
  if (cursor != data_size) {
    *error = "data bytes [" + std::to_string(cursor) + ", " + std::to_string(data_size) +
             ") after the last tensor belong to no tensor";
    return false;
  }
  return true;
}

void append_json_string(const std::string& s, std::string* out) {
  *out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      *out += buf;
    } else {
      *out += ch;
    }
  }
  *out += '"';
}

bool check_utf8(const std::string& s, const std::string& what, std::string* error) {
  const size_t bad = first_invalid_utf8(reinterpret_cast<const unsigned char*>(s.data()),
                                        s.size());
  if (bad == s.size()) return true;
  *error = what + " " + quote(s) + " is not valid UTF-8 at byte " + std::to_string(bad);
  return false;
}

}  // namespace

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
  for (const SafeTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

size_t safetensors_dtype_size(const std::string& dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (dtype == d.name) return d.size;
  }
  return 0;
}

bool parse_safetensors(const uint8_t* bytes, size_t size, SafeTensorsFile* out,
                       std::string* error) {
  out->tensors.clear();
  out->metadata.clear();
  if (size < kLengthBytes) {
    *error = "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length";
    return false;
  }
  uint64_t n = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (n > size - kLengthBytes) {
    *error = "header length " + std::to_string(n) + " exceeds the " +
             std::to_string(size - kLengthBytes) + " bytes after the length field";
    return false;
  }
  const unsigned char* header = bytes + kLengthBytes;
  const size_t bad = first_invalid_utf8(header, n);
  if (bad != n) {
    *error = "header byte " + std::to_string(bad) + ": invalid UTF-8";
    return false;
  }
  std::vector<Entry> entries;
  HeaderParser parser(reinterpret_cast<const char*>(header), n, error);
  if (!parser.parse(&entries, &out->metadata)) return false;
  const uint8_t* data = header + n;
  const uint64_t data_size = size - kLengthBytes - n;
  if (!validate_layout(entries, data_size, error)) return false;
  out->tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    SafeTensor t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.shape.assign(e.shape.begin(), e.shape.end());
    t.data.assign(data + e.begin, data + e.end);
    out->tensors.push_back(std::move(t));
  }
  return true;
}

bool read_safetensors(const std::string& path, SafeTensorsFile* out, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  // Read in chunks rather than trusting a size from fseek: works for pipes and never
  // allocates more than the file holds.
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  const bool read_failed = std::ferror(f) != 0;
  std::fclose(f);
  if (read_failed) {
    *error = path + ": read error";
    return false;
  }
  if (!parse_safetensors(bytes.data(), bytes.size(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool serialize_safetensors(const SafeTensorsFile& file, std::vector<uint8_t>* out,
                           std::string* error) {
  std::set<std::string> names;
  for (const SafeTensor& t : file.tensors) {
    const std::string where = "tensor " + quote(t.name);
    if (t.name == kMetadataKey) {
      *error = "tensor name " + quote(t.name) + " is reserved for the metadata";
      return false;
    }
    if (!check_utf8(t.name, "tensor name", error)) return false;
    if (!names.insert(t.name).second) {
      *error = "duplicate tensor name " + quote(t.name);
      return false;
    }
    const size_t item = safetensors_dtype_size(t.dtype);
    if (item == 0) {
      *error = where + " has unknown dtype " + quote(t.dtype);
      return false;
    }
    uint64_t bytes = item;
    for (int64_t d : t.shape) {
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
        *error = where + " has invalid shape " + list_string(t.shape);
        return false;
      }
    }
    if (bytes != t.data.size()) {
      *error = where + " holds " + std::to_string(t.data.size()) + " bytes but dtype " +
               t.dtype + " and shape " + list_string(t.shape) + " need " +
               std::to_string(bytes);
      return false;
    }
  }
  std::set<std::string> keys;
  for (const auto& kv : file.metadata) {
    if (!check_utf8(kv.first, "metadata key", error) ||
        !check_utf8(kv.second, "metadata value", error)) {
      return false;
    }
    if (!keys.insert(kv.first).second) {
      *error = "duplicate metadata key " + quote(kv.first);
      return false;
    }
  }

  // Larger items first, as the reference writer does: with the data buffer 8-byte aligned,
  // every tensor then starts at a multiple of its item size, so readers may map it in place.
  std::vector<const SafeTensor*> order;
  for (const SafeTensor& t : file.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const SafeTensor* a, const SafeTensor* b) {
    const size_t sa = safetensors_dtype_size(a->dtype), sb = safetensors_dtype_size(b->dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  std::string header = "{";
  if (!file.metadata.empty()) {
    append_json_string(kMetadataKey, &header);
    header += ":{";
    for (size_t i = 0; i < file.metadata.size(); ++i) {
      if (i > 0) header += ',';
      append_json_string(file.metadata[i].first, &header);
      header += ':';
      append_json_string(file.metadata[i].second, &header);
    }
    header += '}';
  }
  uint64_t offset = 0;
  for (const SafeTensor* t : order) {
    if (header.size() > 1) header += ',';
    append_json_string(t->name, &header);
    header += ":{\"dtype\":";
    append_json_string(t->dtype, &header);
    header += ",\"shape\":" + list_string(t->shape, ",") + ",\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + t->data.size()) + "]}";
    offset += t->data.size();
  }
  header += '}';
  header.append((kLengthBytes - header.size() % kLengthBytes) % kLengthBytes, ' ');

  out->clear();
  out->reserve(kLengthBytes + header.size() + offset);
  const uint64_t n = header.size();
  for (size_t i = 0; i < kLengthBytes; ++i) out->push_back(static_cast<uint8_t>(n >> (8 * i)));
  out->insert(out->end(), header.begin(), header.end());
  for (const SafeTensor* t : order) out->insert(out->end(), t->data.begin(), t->data.end());
  return true;
}

bool write_safetensors(const std::string& path, const SafeTensorsFile& file,
                       std::string* error) {
  std::vector<uint8_t> bytes;
  if (!serialize_safetensors(file, &bytes, error)) {
    *error = path + ": " + *error;
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    *error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  // fclose flushes, so its failure is a write failure too (e.g. a full disk).
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    *error = path + ": write failed: " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace remat
