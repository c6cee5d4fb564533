// Internal to the safetensors reader and writer: the strict parser of the header's JSON, the
// string helpers (UTF-8 validation, quoting names for messages) that both sides use, and the
// header encoder shared by the in-memory encoder and the file writer.
#ifndef REMAT_IO_SAFETENSORS_JSON_H_
#define REMAT_IO_SAFETENSORS_JSON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace remat {

struct SafeTensor;
struct SafeTensorsFile;

namespace safetensors_internal {

/// The header key whose value is the metadata map rather than a tensor.
constexpr char kMetadataKey[] = "__metadata__";

/// Returns |s| quoted for an error message. Names come from untrusted files: non-printable
/// bytes are escaped and long names cut, so a hostile name cannot garble or flood the message.
std::string quote(const std::string& s);

/// Returns the index of the first byte of the |n| bytes at |s| that is not part of valid UTF-8
/// (overlong forms, surrogates and code points above U+10FFFF are invalid), or |n| when all of
/// it is valid.
size_t first_invalid_utf8(const unsigned char* s, size_t n);

/// One header entry before its offsets are checked against the data buffer.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// Parses the |size| bytes of header JSON at |text| (already checked to be valid UTF-8):
/// exactly one object whose values are tensor entries (an object with "dtype", "shape",
/// "data_offsets") or the "__metadata__" object of strings. Appends the tensors to |entries| in
/// header order and the metadata to |metadata| in file order; dtypes and offsets are not
/// checked here. On failure returns false and sets |error| to "header byte N: " and what is
/// wrong at byte N. The caller keeps ownership of |text|.
bool parse_header(const char* text, size_t size, std::vector<Entry>* entries,
                  std::vector<std::pair<std::string, std::string>>* metadata, std::string* error);

/// Defined in safetensors.cc, for the encoder there and the file writer (safetensors_write.cc):
/// validates |file| and lays it out as the reference writer does. |header_out| gets the 8-byte
/// length and the padded JSON, |order_out| the tensors in data order (pointers into |file|).
/// Copies no tensor data. On failure returns false and sets |error| to what is wrong.
bool encode_header(const SafeTensorsFile& file, std::string* header_out,
                   std::vector<const SafeTensor*>* order_out, std::string* error);

}  // namespace safetensors_internal
}  // namespace remat

#endif  // REMAT_IO_SAFETENSORS_JSON_H_
