// Reads and writes safetensors files on the host (CLI parameter import/export, test vectors).
//
// Format: an 8-byte little-endian u64 header length N, N bytes of JSON
//   {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, ...,
//    "__metadata__": {"KEY": "VALUE", ...}}
// then the data buffer; offsets are relative to the start of the data buffer. The reader is
// as strict as the reference implementation (Hugging Face's safetensors): the tensors must
// tile the data buffer exactly, without gaps, overlaps or trailing bytes, so every file it
// accepts is one the reference accepts too. It never crashes on untrusted bytes: every
// failure is a false return with a message naming the tensor, the field and the values.
#ifndef REMAT_IO_SAFETENSORS_H_
#define REMAT_IO_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace remat {

/// One named tensor. |dtype| is the safetensors spelling ("F32", "I32", "F64", "I64", "F16",
/// "BF16", "BOOL", "U8", "I8", "I16", "U16", "U32", "U64", "F8_E5M2", "F8_E4M3"); |shape| is
/// empty for a scalar; |data| holds numel * itemsize bytes, little-endian, row-major.
struct SafeTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// The contents of one file. |metadata| is the "__metadata__" map in file order.
struct SafeTensorsFile {
  std::vector<SafeTensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;

  /// Returns the tensor called |name|, or nullptr; the pointer lives as long as |tensors|
  /// is not modified.
  const SafeTensor* find(const std::string& name) const;
};

/// Returns the size in bytes of one element of |dtype|, or 0 when |dtype| is not a known
/// byte-sized safetensors dtype.
size_t safetensors_dtype_size(const std::string& dtype);

/// Parses the |size| bytes at |bytes| (a whole file) into |out|, tensors in header order.
/// On failure returns false, sets |error| to what is wrong and leaves |out| unspecified;
/// "header byte N" in a message counts from the first byte of the JSON (file offset N + 8).
/// The caller keeps ownership of |bytes|; |out| copies what it needs.
bool parse_safetensors(const uint8_t* bytes, size_t size, SafeTensorsFile* out, std::string* error);

/// The longest safetensors header read_safetensors takes (the reference implementation's
/// limit), and the largest file it reads (a pipe or a device: at most half of the machine's
/// memory): no input makes it hold more than this, or more than the file's header claims.
constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;
constexpr uint64_t kMaxSafetensorsBytes = uint64_t{1} << 40;

/// Reads the file at |path| into |out|; on failure returns false and sets |error| to a
/// message that names |path| and what is wrong. It reads the length and the header first, then
/// only the bytes the header describes: a regular file must be exactly that long, a pipe or a
/// device gives no more than that, and neither more than kMaxSafetensorsBytes (a pipe or a
/// device no more than half of the machine's physical memory).
bool read_safetensors(const std::string& path, SafeTensorsFile* out, std::string* error);

/// Encodes |file| into |out| (replacing its contents) as the reference writer does: tensors
/// sorted by item size (largest first), then by name, data packed in that order, so each
/// tensor starts at a multiple of its item size; "__metadata__" first in the header when
/// non-empty; header padded with spaces to a multiple of 8 bytes. Equal files give equal bytes.
/// Returns false and sets |error| when |file| is not representable: unknown dtype, negative
/// dimension, data size != numel * itemsize, duplicate name, a tensor named "__metadata__",
/// duplicate metadata key, or a string that is not valid UTF-8.
bool serialize_safetensors(const SafeTensorsFile& file, std::vector<uint8_t>* out,
                           std::string* error);

/// Writes |file| to |path| as serialize_safetensors encodes it, atomically (io/atomic_file.h):
/// validated first, then streamed tensor by tensor from |file| (no second copy of the data in
/// memory) to a temporary file renamed over |path|. On failure returns false, sets |error| to
/// a message naming |path|, and |path| keeps its old contents (or stays absent). Defined in
/// safetensors_write.cc, which needs io/atomic_file.cc; the rest of this header does not.
bool write_safetensors(const std::string& path, const SafeTensorsFile& file, std::string* error);

}  // namespace remat

#endif  // REMAT_IO_SAFETENSORS_H_
