// libFuzzer target: untrusted bytes -> the safetensors reader (src/io/safetensors.cc and
// safetensors_json.cc, compiled in from the same sources as the CLI).
//
// What it holds the reader to (src/io/safetensors.h): any bytes give true or false, never a
// crash, a leak, an out-of-bounds access or undefined behaviour (ASan + UBSan build); a failure
// comes with a message; a file it accepts has tensors whose data is elements x item size, and
// round-trips: serialize_safetensors accepts it (every file the reader accepts is
// representable) and the reader reads the encoded bytes back to the same tensors and metadata.
//
// Seeds: tests/data/*.safetensors and parameters saved by `remat train --save-params` (made by
// tests/fuzz/run.sh). Run: tests/fuzz/run.sh, or by hand
//   build-fuzz/tests/fuzz/fuzz_safetensors CORPUS_DIR SEED_DIR      (docs/fuzzing.md)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  fprintf(stderr, "fuzz_safetensors: %s: %s\n", what, detail.c_str());
  abort();
}

std::vector<remat::SafeTensor> by_name(std::vector<remat::SafeTensor> tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const remat::SafeTensor& a, const remat::SafeTensor& b) { return a.name < b.name; });
  return tensors;
}

bool same(const remat::SafeTensor& a, const remat::SafeTensor& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.data == b.data;
}

// The same bytes as a file through read_safetensors, which reads the length, the header and
// then only the data the header describes (its bound on memory): it must accept and refuse
// exactly what parse_safetensors does, with the same tensors.
void check_the_file_reader(const uint8_t* data, size_t size, bool parsed,
                           const remat::SafeTensorsFile& file) {
  static const std::string path = "/tmp/fuzz_safetensors." + std::to_string(getpid());
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    fail("fuzz_safetensors", "cannot write " + path);
  remat::SafeTensorsFile read;
  std::string error;
  const bool ok = remat::read_safetensors(path, &read, &error);
  remove(path.c_str());
  if (ok != parsed)
    fail("read_safetensors", std::string(ok ? "accepted" : "refused") + " what parse_safetensors " +
                                 (parsed ? "accepted" : "refused") + ": " + error);
  if (!ok && error.empty()) fail("read_safetensors", "false without a message");
  if (ok && (read.tensors.size() != file.tensors.size() ||
             !std::equal(read.tensors.begin(), read.tensors.end(), file.tensors.begin(), same)))
    fail("read_safetensors", "other tensors than parse_safetensors");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  remat::SafeTensorsFile file;
  std::string error;
  const bool parsed = remat::parse_safetensors(data, size, &file, &error);
  check_the_file_reader(data, size, parsed, file);
  if (!parsed) {
    if (error.empty()) fail("parse_safetensors", "false without a message");
    return 0;
  }
  for (const remat::SafeTensor& t : file.tensors) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) fail("parse_safetensors", "negative dimension in '" + t.name + "'");
      elements *= static_cast<uint64_t>(d);
    }
    const size_t item = remat::safetensors_dtype_size(t.dtype);
    if (item == 0) fail("parse_safetensors", "unknown dtype '" + t.dtype + "' accepted");
    if (elements * item != t.data.size())
      fail("parse_safetensors", "data size of '" + t.name + "'");
    if (file.find(t.name) == nullptr) fail("SafeTensorsFile::find", "misses '" + t.name + "'");
  }
  std::vector<uint8_t> encoded;
  if (!remat::serialize_safetensors(file, &encoded, &error)) {
    fail("serialize_safetensors", "refused what the reader accepted: " + error);
  }
  remat::SafeTensorsFile again;
  if (!remat::parse_safetensors(encoded.data(), encoded.size(), &again, &error)) {
    fail("parse_safetensors", "refused what serialize_safetensors wrote: " + error);
  }
  const std::vector<remat::SafeTensor> before = by_name(file.tensors),
                                       after = by_name(again.tensors);
  if (before.size() != after.size() ||
      !std::equal(before.begin(), before.end(), after.begin(), same)) {
    fail("round trip", "other tensors after serialize and parse");
  }
  auto metadata = file.metadata, metadata_again = again.metadata;
  std::sort(metadata.begin(), metadata.end());
  std::sort(metadata_again.begin(), metadata_again.end());
  if (metadata != metadata_again) fail("round trip", "other metadata after serialize and parse");
  return 0;
}
