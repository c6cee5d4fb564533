// Safetensors reading and encoding: the file framing, a validator of the data layout, and a
// canonical encoder. The header's JSON is parsed in safetensors_json.cc; files are written
// in safetensors_write.cc.
#include "io/safetensors.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "io/safetensors_json.h"

namespace remat {
namespace {

using safetensors_internal::Entry;
using safetensors_internal::first_invalid_utf8;
using safetensors_internal::kMetadataKey;
using safetensors_internal::quote;

constexpr size_t kLengthBytes = 8;

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

template <typename T>
std::string list_string(const std::vector<T>& values, const char* separator = ", ") {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += separator;
    s += std::to_string(values[i]);
  }
  return s + "]";
}

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
               " bytes) but dtype " + e.dtype + " and shape " + list_string(e.shape) + " need " +
               std::to_string(bytes);
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
      *error = "tensor " + quote(e->name) + " data_offsets [" + std::to_string(e->begin) + ", " +
               std::to_string(e->end) + "] overlap tensor " + quote(previous->name) + " [" +
               std::to_string(previous->begin) + ", " + std::to_string(previous->end) + "]";
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
  const size_t bad = first_invalid_utf8(reinterpret_cast<const unsigned char*>(s.data()), s.size());
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
  if (!safetensors_internal::parse_header(reinterpret_cast<const char*>(header), n, &entries,
                                          &out->metadata, error)) {
    return false;
  }
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

namespace {

// Reads |n| bytes of |f| onto the end of |bytes|; false at a short read.
bool read_exactly(std::FILE* f, uint64_t n, std::vector<uint8_t>* bytes) {
  uint8_t chunk[1 << 16];
  while (n > 0) {
    const size_t want = n < sizeof chunk ? static_cast<size_t>(n) : sizeof chunk;
    const size_t got = std::fread(chunk, 1, want, f);
    bytes->insert(bytes->end(), chunk, chunk + got);
    if (got < want) return false;
    n -= got;
  }
  return true;
}

// What read_safetensors reads of |f| (|size| bytes when |regular|): the length, the header,
// then exactly the data the header describes, so that no file, however large or endless,
// makes it hold more than the header's claim, and never more than |cap| bytes.
bool read_bounded(std::FILE* f, bool regular, uint64_t size, uint64_t cap,
                  std::vector<uint8_t>* bytes, std::string* error) {
  if (!read_exactly(f, kLengthBytes, bytes)) return true;  // parse_safetensors says it is short
  uint64_t n = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) n |= static_cast<uint64_t>((*bytes)[i]) << (8 * i);
  if (n > kMaxSafetensorsHeaderBytes) {
    *error = "header length " + std::to_string(n) + " is over the " +
             std::to_string(kMaxSafetensorsHeaderBytes) + "-byte limit of a safetensors header";
    return false;
  }
  if (regular && n > size - kLengthBytes) return true;  // parse_safetensors names the sizes
  if (!read_exactly(f, n, bytes)) return true;
  // The data's size is the largest end offset of the header's tensors; parse_safetensors then
  // checks the whole layout. A header that does not parse is refused by it as well.
  std::vector<Entry> entries;
  std::vector<std::pair<std::string, std::string>> metadata;
  const char* header = reinterpret_cast<const char*>(bytes->data() + kLengthBytes);
  std::string ignored;
  if (first_invalid_utf8(reinterpret_cast<const unsigned char*>(header), n) != n ||
      !safetensors_internal::parse_header(header, n, &entries, &metadata, &ignored)) {
    return true;
  }
  uint64_t data = 0;
  for (const Entry& e : entries) data = e.end > data ? e.end : data;
  // Compared before it is added up: an end offset near 2^64 would wrap the sum to a small size.
  if (data > cap || kLengthBytes + n > cap - data) {
    *error = "its header describes " + std::to_string(data) + " bytes of data after " +
             std::to_string(kLengthBytes + n) + " of header, over the " + std::to_string(cap) +
             "-byte limit of a " +
             (regular ? std::string("safetensors file")
                      : std::string("pipe or device (half of this machine's memory)"));
    return false;
  }
  const uint64_t total = kLengthBytes + n + data;
  if (regular && total != size) {
    *error =
        "file is " + std::to_string(size) + " bytes, its header describes " + std::to_string(total);
    return false;
  }
  // A regular file's claim is its size: read into one allocation. A pipe's claim is only a
  // claim; its bytes grow the buffer as they come.
  if (regular) bytes->reserve(static_cast<size_t>(total));
  if (!read_exactly(f, data, bytes)) return true;
  uint8_t extra;
  if (std::fread(&extra, 1, 1, f) == 1) {
    *error = "more bytes follow the " + std::to_string(total) + " its header describes";
    return false;
  }
  return true;
}

}  // namespace

bool read_safetensors(const std::string& path, SafeTensorsFile* out, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat info;
  if (fstat(fileno(f), &info) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    std::fclose(f);
    return false;
  }
  if (S_ISDIR(info.st_mode)) {
    *error = path + ": is a directory, not a safetensors file";
    std::fclose(f);
    return false;
  }
  // A regular file's size bounds what is read; a pipe or device is read no further than its
  // header's claim (read_bounded).
  const bool regular = S_ISREG(info.st_mode);
  std::vector<uint8_t> bytes;
  std::string bound_error;
  uint64_t cap = kMaxSafetensorsBytes;
  if (!regular) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      cap = std::min(cap, static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2);
  }
  const bool within =
      read_bounded(f, regular, static_cast<uint64_t>(info.st_size), cap, &bytes, &bound_error);
  const int read_errno = std::ferror(f) != 0 ? errno : 0;
  std::fclose(f);
  if (read_errno != 0) {
    *error = path + ": read error: " + std::strerror(read_errno);
    return false;
  }
  if (!within) {
    *error = path + ": " + bound_error;
    return false;
  }
  if (!parse_safetensors(bytes.data(), bytes.size(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

namespace safetensors_internal {

bool encode_header(const SafeTensorsFile& file, std::string* header_out,
                   std::vector<const SafeTensor*>* order_out, std::string* error) {
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
      *error = where + " holds " + std::to_string(t.data.size()) + " bytes but dtype " + t.dtype +
               " and shape " + list_string(t.shape) + " need " + std::to_string(bytes);
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
  std::vector<const SafeTensor*>& order = *order_out;
  order.clear();
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

  const uint64_t n = header.size();
  header_out->clear();
  for (size_t i = 0; i < kLengthBytes; ++i) header_out->push_back(static_cast<char>(n >> (8 * i)));
  *header_out += header;
  return true;
}

}  // namespace safetensors_internal

bool serialize_safetensors(const SafeTensorsFile& file, std::vector<uint8_t>* out,
                           std::string* error) {
  std::string header;
  std::vector<const SafeTensor*> order;
  if (!safetensors_internal::encode_header(file, &header, &order, error)) return false;
  size_t total = header.size();
  for (const SafeTensor* t : order) total += t->data.size();
  out->clear();
  out->reserve(total);
  out->insert(out->end(), header.begin(), header.end());
  for (const SafeTensor* t : order) out->insert(out->end(), t->data.begin(), t->data.end());
  return true;
}

}  // namespace remat
