// Tests of the safetensors reader/writer: round trips, a file written by Python, and rejection
// of every kind of malformed input with a message that names the problem.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/cmocka_cpp.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "io/safetensors.h"

#if !defined(REMAT_TEST_DATA_DIR)
#error "REMAT_TEST_DATA_DIR must name the tests/data folder"
#endif

namespace {

using remat::SafeTensor;
using remat::SafeTensorsFile;

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  return std::vector<uint8_t>(b, b + n);
}

// A file with |header| as its JSON (length field set to its size) and |data_bytes| of data.
std::vector<uint8_t> file_with_header(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i));
  return out;
}

// Asserts that |bytes| are rejected with a message containing every one of |needles|.
void expect_rejected(const std::vector<uint8_t>& bytes,
                     std::initializer_list<const char*> needles) {
  SafeTensorsFile file;
  std::string error;
  if (parse_safetensors(bytes.data(), bytes.size(), &file, &error)) {
    fail_msg("accepted a malformed file");
  }
  for (const char* needle : needles) {
    if (error.find(needle) == std::string::npos) {
      fail_msg("error \"%s\" does not mention \"%s\"", error.c_str(), needle);
    }
  }
}

void expect_header_rejected(const std::string& header, size_t data_bytes,
                            std::initializer_list<const char*> needles) {
  expect_rejected(file_with_header(header, data_bytes), needles);
}

std::string temp_path() {
  const char* dir = getenv("TMPDIR");
  std::string pattern =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/remat_safetensors_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = mkstemp(buf.data());
  assert_true(fd >= 0);
  close(fd);
  return std::string(buf.data());
}

std::vector<uint8_t> read_fixture() {
  const std::string path = std::string(REMAT_TEST_DATA_DIR) + "/fixture.safetensors";
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) fail_msg("cannot open %s", path.c_str());
  std::vector<uint8_t> bytes;
  int c;
  while ((c = fgetc(f)) != EOF) bytes.push_back(static_cast<uint8_t>(c));
  fclose(f);
  return bytes;
}

SafeTensorsFile sample_file() {
  SafeTensorsFile file;
  const float w[6] = {1.0f, -2.5f, 3.0f, 0.125f, -0.0f, 1e30f};
  const int32_t labels[3] = {0, 7, -1};
  const double pi = 3.141592653589793;
  const uint16_t bf16[2] = {0x3f80, 0xc000};
  file.tensors.push_back({"w", "F32", {2, 3}, bytes_of(w, sizeof w)});
  file.tensors.push_back({"labels", "I32", {3}, bytes_of(labels, sizeof labels)});
  file.tensors.push_back({"pi", "F64", {}, bytes_of(&pi, sizeof pi)});
  file.tensors.push_back({"a \"quoted\"\\name\n\xc3\xa9", "BF16", {2}, bytes_of(bf16, 4)});
  file.tensors.push_back({"nothing", "F32", {4, 0}, {}});
  file.tensors.push_back({"flag", "BOOL", {1}, {1}});
  file.metadata.push_back({"template", "mlp:layers=3,width=16"});
  file.metadata.push_back({"note", "tab\there \"q\" \xe2\x82\xac"});
  return file;
}

void assert_same_tensor(const SafeTensor& a, const SafeTensor& b) {
  assert_string_equal(a.name.c_str(), b.name.c_str());
  assert_string_equal(a.dtype.c_str(), b.dtype.c_str());
  assert_true(a.shape == b.shape);
  assert_true(a.data == b.data);
}

void round_trip_through_a_file_keeps_tensors_and_metadata(void**) {
  const SafeTensorsFile original = sample_file();
  const std::string path = temp_path();
  std::string error;
  assert_true(write_safetensors(path, original, &error));
  SafeTensorsFile loaded;
  const bool ok = read_safetensors(path, &loaded, &error);
  unlink(path.c_str());
  if (!ok) fail_msg("%s", error.c_str());
  assert_int_equal(loaded.tensors.size(), original.tensors.size());
  for (const SafeTensor& t : original.tensors) {
    const SafeTensor* back = loaded.find(t.name);
    assert_non_null(back);
    assert_same_tensor(t, *back);
  }
  assert_true(loaded.metadata == original.metadata);
}

void written_header_is_padded_to_8_and_tensors_aligned_to_their_item_size(void**) {
  std::vector<uint8_t> bytes;
  std::string error;
  assert_true(serialize_safetensors(sample_file(), &bytes, &error));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  assert_int_equal(n % 8, 0);
  assert_true(bytes[8 + n - 1] == ' ' || bytes[8 + n - 1] == '}');
  SafeTensorsFile parsed;
  assert_true(parse_safetensors(bytes.data(), bytes.size(), &parsed, &error));
  size_t offset = 8 + n;
  for (const SafeTensor& t : parsed.tensors) {
    assert_int_equal(offset % remat::safetensors_dtype_size(t.dtype), 0);
    offset += t.data.size();
  }
  assert_int_equal(offset, bytes.size());
  // Serialising the parsed file again gives the same bytes: the writer is canonical.
  std::vector<uint8_t> again;
  assert_true(serialize_safetensors(parsed, &again, &error));
  assert_true(again == bytes);
}

void empty_file_round_trips(void**) {
  std::vector<uint8_t> bytes;
  std::string error;
  assert_true(serialize_safetensors(SafeTensorsFile(), &bytes, &error));
  assert_int_equal(bytes.size(), 16);
  SafeTensorsFile parsed;
  assert_true(parse_safetensors(bytes.data(), bytes.size(), &parsed, &error));
  assert_true(parsed.tensors.empty() && parsed.metadata.empty());
}

void file_written_by_python_reads_with_its_values(void**) {
  SafeTensorsFile file;
  std::string error;
  const std::string path = std::string(REMAT_TEST_DATA_DIR) + "/fixture.safetensors";
  if (!read_safetensors(path, &file, &error)) fail_msg("%s", error.c_str());
  assert_int_equal(file.tensors.size(), 6);
  // Header order is kept.
  assert_string_equal(file.tensors[0].name.c_str(), "weight");
  assert_string_equal(file.tensors[5].name.c_str(), "half");

  const SafeTensor* w = file.find("weight");
  assert_non_null(w);
  assert_string_equal(w->dtype.c_str(), "F32");
  assert_true(w->shape == std::vector<int64_t>({2, 3}));
  const float want_w[6] = {0.5f, -1.0f, 1.5f, -2.0f, 2.5f, -3.0f};
  assert_true(w->data == bytes_of(want_w, sizeof want_w));

  const SafeTensor* ids = file.find("ids");
  assert_non_null(ids);
  const int32_t want_ids[4] = {1, -2, 3, 2147483647};
  assert_true(ids->data == bytes_of(want_ids, sizeof want_ids));

  const SafeTensor* scalar = file.find("scalar");
  assert_non_null(scalar);
  assert_true(scalar->shape.empty());
  const double want_scalar = 3.25;
  assert_true(scalar->data == bytes_of(&want_scalar, sizeof want_scalar));

  const SafeTensor* half = file.find("half");
  assert_non_null(half);
  const uint16_t want_half[2] = {0x3c00, 0xc000};  // 1.0, -2.0 in IEEE half
  assert_true(half->data == bytes_of(want_half, sizeof want_half));

  const SafeTensor* cafe = file.find("caf\xc3\xa9");  // written as "caf\u00e9"
  assert_non_null(cafe);
  assert_true(cafe->data == std::vector<uint8_t>({1, 2, 255}));

  const SafeTensor* empty = file.find("empty");
  assert_non_null(empty);
  assert_true(empty->shape == std::vector<int64_t>({0, 3}));
  assert_true(empty->data.empty());

  assert_null(file.find("missing"));
  assert_int_equal(file.metadata.size(), 2);
  assert_string_equal(file.metadata[0].first.c_str(), "format");
  assert_string_equal(file.metadata[0].second.c_str(), "pt");
}

void missing_file_error_names_the_path(void**) {
  SafeTensorsFile file;
  std::string error;
  assert_false(read_safetensors("/nonexistent/dir/x.safetensors", &file, &error));
  assert_non_null(strstr(error.c_str(), "/nonexistent/dir/x.safetensors"));
}

void file_shorter_than_the_length_field_is_rejected(void**) {
  const uint8_t three[3] = {1, 0, 0};
  expect_rejected(bytes_of(three, 3), {"3 bytes", "header length"});
  expect_rejected({}, {"0 bytes"});
}

void header_length_past_the_end_of_the_file_is_rejected(void**) {
  std::vector<uint8_t> bytes = file_with_header("{}", 0);
  bytes[0] = 3;
  expect_rejected(bytes, {"header length 3", "exceeds the 2 bytes"});
  for (int i = 0; i < 8; ++i) bytes[i] = 0xff;
  expect_rejected(bytes, {"header length 18446744073709551615"});
}

void every_truncation_of_a_valid_file_is_rejected(void**) {
  const std::vector<uint8_t> bytes = read_fixture();
  for (size_t n = 0; n < bytes.size(); ++n) {
    SafeTensorsFile file;
    std::string error;
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    if (parse_safetensors(cut.data(), cut.size(), &file, &error)) {
      fail_msg("accepted the first %zu of %zu bytes", n, bytes.size());
    }
    assert_false(error.empty());
  }
}

void truncated_header_json_is_rejected(void**) {
  const std::string full = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  for (size_t n = 0; n < full.size(); ++n) {
    SafeTensorsFile file;
    std::string error;
    const std::vector<uint8_t> bytes = file_with_header(full.substr(0, n), 4);
    assert_false(parse_safetensors(bytes.data(), bytes.size(), &file, &error));
    assert_non_null(strstr(error.c_str(), "header byte"));
  }
}

void malformed_json_is_rejected_at_its_byte(void**) {
  expect_header_rejected("[]", 0, {"header byte 0", "expected '{'"});
  expect_header_rejected("", 0, {"expected '{'", "end of header"});
  expect_header_rejected("{,}", 0, {"header byte 1", "expected a string"});
  expect_header_rejected(R"({"a" {}})", 0, {"expected ':'", "'a'"});
  expect_header_rejected(R"({'a':{}})", 0, {"expected a string", "'''"});
  expect_header_rejected(R"({"__metadata__":{"k":"v",}})", 0, {"expected a string"});
  expect_header_rejected(R"({"__metadata__":{"k":"v"}} x)", 0, {"unexpected 'x' after"});
  expect_header_rejected(R"({"__metadata__":{"k":"v"}}{})", 0, {"after the header object"});
  expect_header_rejected(R"({"__metadata__":{"k":"\q"}})", 0, {"bad escape"});
  expect_header_rejected("{\"__metadata__\":{\"k\":\"a\nb\"}}", 0, {"control character"});
  expect_header_rejected(R"({"__metadata__":{"k":"\ud800"}})", 0, {"high surrogate"});
  expect_header_rejected(R"({"__metadata__":{"k":"\udc00"}})", 0, {"lone low surrogate"});
  expect_header_rejected(R"({"__metadata__":{"k":"\u12"}})", 0, {"\\u escape"});
  expect_header_rejected("{\"__metadata__\":{\"k\":\"\xc3\x28\"}}", 0,
                         {"header byte 22", "invalid UTF-8"});
  expect_header_rejected(R"({"__metadata__":{"k":1}})", 0, {"expected a string", "'k'"});
  expect_header_rejected(R"({"__metadata__":{"k":"v"},"__metadata__":{}})", 0,
                         {"duplicate \"__metadata__\""});
  expect_header_rejected(R"({"__metadata__":{"k":"v","k":"w"}})", 0,
                         {"duplicate __metadata__ key 'k'"});
  expect_header_rejected(R"({"a":5})", 0, {"tensor 'a'", "expected '{'"});
}

void bad_numbers_in_shape_or_offsets_are_rejected(void**) {
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0,
                         {"tensor 'a' shape[0]", "non-negative integer", "'-1'"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}})", 0,
                         {"shape[0]", "'1.5'"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1e2],"data_offsets":[0,0]}})", 0,
                         {"shape[0]", "'1e2'"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,0]}})", 0,
                         {"shape[0]", "'01'"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,0]}})", 0,
                         {"expected an integer for tensor 'a' shape[0]"});
  expect_header_rejected(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]}})", 0,
      {"data_offsets[1]", "does not fit in 64 bits"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 0,
                         {"tensor 'a' data_offsets must have 2 values, found 3"});
  expect_header_rejected(
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0,
      {"tensor 'a' shape [4294967296, 4294967296] overflows"});
  expect_header_rejected(
      R"({"a":{"dtype":"U8","shape":[9223372036854775808,0],"data_offsets":[0,0]}})", 0,
      {"tensor 'a' shape", "overflows"});
}

void missing_duplicate_and_unknown_fields_are_rejected(void**) {
  expect_header_rejected(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4,
                         {"tensor 'a' has no \"dtype\""});
  expect_header_rejected(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4,
                         {"tensor 'a' has no \"shape\""});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1]}})", 4,
                         {"tensor 'a' has no \"data_offsets\""});
  expect_header_rejected(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         4, {"tensor 'a' has field 'dtype' twice"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"strides":[1]}})",
                         4, {"tensor 'a' has unknown field 'strides'"});
}

void unknown_dtype_is_rejected(void**) {
  expect_header_rejected(R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", 4,
                         {"tensor 'a' has unknown dtype 'F31'"});
  expect_header_rejected(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4,
                         {"unknown dtype 'f32'"});
}

void duplicate_tensor_names_are_rejected(void**) {
  expect_header_rejected(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                         R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                         2, {"duplicate tensor name 'a'"});
}

void size_not_matching_dtype_and_shape_is_rejected(void**) {
  expect_header_rejected(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20,
                         {"tensor 'w'", "[0, 20]", "20 bytes", "F32", "[2, 3]", "need 24"});
}

void overlapping_offsets_are_rejected(void**) {
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                         16, {"tensor 'b' data_offsets [8, 16] overlap tensor 'a' [0, 12]"});
}

void offsets_outside_the_data_buffer_are_rejected(void**) {
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8,
                         {"tensor 'a'", "[4, 12]", "past the end of the 8-byte data buffer"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8,
                         {"tensor 'a'", "[8, 0]", "end before begin"});
}

void gaps_and_trailing_bytes_are_rejected(void**) {
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8,
                         {"data bytes [0, 4)", "gap before tensor 'a'"});
  expect_header_rejected(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6,
                         {"data bytes [4, 6)", "after the last tensor"});
}

void deep_nesting_is_rejected_without_recursion(void**) {
  const std::string deep(1000000, '[');
  expect_header_rejected("{\"__metadata__\":{\"k\":" + deep, 0, {"expected a string"});
  expect_header_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":" + deep, 0, {"tensor 'a' shape[0]"});
  expect_header_rejected("{\"a\":" + std::string(1000000, '{'), 0, {"expected a string"});
}

void hostile_names_are_quoted_and_cut_in_messages(void**) {
  // "\\n" is JSON's escape: the parsed name starts with a newline byte.
  const std::vector<uint8_t> bytes =
      file_with_header("{\"\\n" + std::string(1000, 'x') +
                           "\":{\"dtype\":\"Q\",\"shape\":[],\"data_offsets\":[0,0]}}",
                       0);
  SafeTensorsFile file;
  std::string error;
  assert_false(parse_safetensors(bytes.data(), bytes.size(), &file, &error));
  assert_non_null(strstr(error.c_str(), "tensor '\\x0axxx"));
  assert_non_null(strstr(error.c_str(), "xxx...' has unknown dtype 'Q'"));
  assert_true(error.size() < 200);
}

// Flipping any byte of a valid file must never crash (this test is meant for the sanitizer
// build); whatever is still accepted must be self-consistent.
void every_byte_flip_is_handled(void**) {
  const std::vector<uint8_t> original = read_fixture();
  const uint8_t masks[] = {0x01, 0x20, 0x80, 0xff};
  for (size_t i = 0; i < original.size(); ++i) {
    for (uint8_t mask : masks) {
      std::vector<uint8_t> bytes = original;
      bytes[i] ^= mask;
      SafeTensorsFile file;
      std::string error;
      if (parse_safetensors(bytes.data(), bytes.size(), &file, &error)) {
        for (const SafeTensor& t : file.tensors) {
          size_t numel = 1;
          for (int64_t d : t.shape) numel *= static_cast<size_t>(d);
          assert_int_equal(t.data.size(), numel * remat::safetensors_dtype_size(t.dtype));
        }
      } else {
        assert_false(error.empty());
      }
    }
  }
}

void writer_rejects_files_it_cannot_represent(void**) {
  std::vector<uint8_t> bytes;
  std::string error;
  SafeTensorsFile file;
  file.tensors.push_back({"w", "F32", {2, 3}, std::vector<uint8_t>(20)});
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(
      strstr(error.c_str(), "tensor 'w' holds 20 bytes but dtype F32 and shape [2, 3] need 24"));

  file.tensors[0] = {"w", "F33", {1}, std::vector<uint8_t>(4)};
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(strstr(error.c_str(), "unknown dtype 'F33'"));

  file.tensors[0] = {"w", "F32", {-1}, {}};
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(strstr(error.c_str(), "invalid shape [-1]"));

  file.tensors[0] = {"w", "U8", {1}, {0}};
  file.tensors.push_back(file.tensors[0]);
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(strstr(error.c_str(), "duplicate tensor name 'w'"));

  file.tensors.resize(1);
  file.tensors[0].name = "__metadata__";
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(strstr(error.c_str(), "reserved for the metadata"));

  file.tensors[0].name = "bad\xff";
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(strstr(error.c_str(), "not valid UTF-8"));

  file.tensors[0].name = "w";
  file.metadata = {{"k", "1"}, {"k", "2"}};
  assert_false(serialize_safetensors(file, &bytes, &error));
  assert_non_null(strstr(error.c_str(), "duplicate metadata key 'k'"));

  assert_false(write_safetensors("/nonexistent/dir/out.safetensors", SafeTensorsFile(), &error));
  assert_non_null(strstr(error.c_str(), "/nonexistent/dir/out.safetensors"));
}

void a_failed_write_keeps_the_previous_file(void**) {
  const std::string path = temp_path();
  std::string error;
  assert_true(write_safetensors(path, sample_file(), &error));
  SafeTensorsFile previous;
  assert_true(read_safetensors(path, &previous, &error));

  // Not representable: refused before anything is written.
  SafeTensorsFile bad = sample_file();
  bad.tensors[1].name = bad.tensors[0].name;
  assert_false(write_safetensors(path, bad, &error));
  assert_non_null(strstr(error.c_str(), path.c_str()));

  // Larger than a file-size limit: the write fails part-way, as on a full disk.
  SafeTensorsFile big;
  big.tensors.push_back({"big", "U8", {1 << 20}, std::vector<uint8_t>(1 << 20, 7)});
  signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit low = old_limit;
  low.rlim_cur = 64 * 1024;
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
  const bool wrote = write_safetensors(path, big, &error);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  assert_false(wrote);
  assert_non_null(strstr(error.c_str(), path.c_str()));
  assert_non_null(strstr(error.c_str(), strerror(EFBIG)));

  SafeTensorsFile after;
  const bool read_back = read_safetensors(path, &after, &error);
  unlink(path.c_str());
  if (!read_back) fail_msg("%s", error.c_str());
  assert_int_equal(after.tensors.size(), previous.tensors.size());
  for (size_t i = 0; i < after.tensors.size(); ++i)
    assert_same_tensor(after.tensors[i], previous.tensors[i]);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip_through_a_file_keeps_tensors_and_metadata),
      cmocka_unit_test(written_header_is_padded_to_8_and_tensors_aligned_to_their_item_size),
      cmocka_unit_test(empty_file_round_trips),
      cmocka_unit_test(file_written_by_python_reads_with_its_values),
      cmocka_unit_test(missing_file_error_names_the_path),
      cmocka_unit_test(file_shorter_than_the_length_field_is_rejected),
      cmocka_unit_test(header_length_past_the_end_of_the_file_is_rejected),
      cmocka_unit_test(every_truncation_of_a_valid_file_is_rejected),
      cmocka_unit_test(truncated_header_json_is_rejected),
      cmocka_unit_test(malformed_json_is_rejected_at_its_byte),
      cmocka_unit_test(bad_numbers_in_shape_or_offsets_are_rejected),
      cmocka_unit_test(missing_duplicate_and_unknown_fields_are_rejected),
      cmocka_unit_test(unknown_dtype_is_rejected),
      cmocka_unit_test(duplicate_tensor_names_are_rejected),
      cmocka_unit_test(size_not_matching_dtype_and_shape_is_rejected),
      cmocka_unit_test(overlapping_offsets_are_rejected),
      cmocka_unit_test(offsets_outside_the_data_buffer_are_rejected),
      cmocka_unit_test(gaps_and_trailing_bytes_are_rejected),
      cmocka_unit_test(deep_nesting_is_rejected_without_recursion),
      cmocka_unit_test(hostile_names_are_quoted_and_cut_in_messages),
      cmocka_unit_test(every_byte_flip_is_handled),
      cmocka_unit_test(writer_rejects_files_it_cannot_represent),
      cmocka_unit_test(a_failed_write_keeps_the_previous_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
