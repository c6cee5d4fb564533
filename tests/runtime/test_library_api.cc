// The library's own C ABI: its version, its backends and their devices, and the struct_size
// rules every struct-taking call follows. (Status strings: test_plan_verify.)
#include "tests/cmocka_cpp.h"

#include <string.h>

#include <string>

#include "remat/remat.h"
#include "runtime/struct_size.h"

namespace {

// ---- remat_version --------------------------------------------------------------------------

void version_reports_this_build_and_the_plan_format_it_reads(void**) {
  remat_version_info info;
  memset(&info, 0xff, sizeof(info));
  info.struct_size = sizeof(info);
  assert_int_equal(remat_version(&info), REMAT_OK);
  assert_int_equal(info.struct_size, sizeof(info));
  assert_int_equal(info.major, REMAT_TEST_VERSION_MAJOR);
  assert_int_equal(info.minor, REMAT_TEST_VERSION_MINOR);
  assert_int_equal(info.patch, REMAT_TEST_VERSION_PATCH);
  assert_int_equal(info.api_version, REMAT_API_VERSION);
  assert_int_equal(info.plan_format_min, REMAT_PLAN_FORMAT_OLDEST_VERSION);
  assert_int_equal(REMAT_PLAN_FORMAT_OLDEST_VERSION, 1);
  assert_int_equal(REMAT_PLAN_FORMAT_VERSION, 4);
  assert_int_equal(info.plan_format_max, REMAT_PLAN_FORMAT_VERSION);
}

void version_rejects_null_and_sizes_it_does_not_know_writing_nothing(void**) {
  assert_int_equal(remat_version(nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  const size_t first = offsetof(remat_version_info, plan_format_max) + sizeof(uint32_t);
  for (size_t size : {size_t{0}, sizeof(size_t), first - 1, sizeof(remat_version_info) + 1,
                      sizeof(remat_version_info) + 64}) {
    remat_version_info info;
    memset(&info, 0xab, sizeof(info));
    info.struct_size = size;
    assert_int_equal(remat_version(&info), REMAT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(info.struct_size, size);
    assert_int_equal(info.major, 0xabababab);
    assert_int_equal(info.plan_format_max, 0xabababab);
  }
}

// ---- Backends and devices -------------------------------------------------------------------

void backends_are_listed_with_cpu_first_and_unique_names(void**) {
  const uint32_t count = remat_backend_count();
  assert_true(count >= 1);
  const char* first = nullptr;
  assert_int_equal(remat_backend_name(0, &first), REMAT_OK);
  assert_string_equal(first, "cpu");
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    assert_int_equal(remat_backend_name(i, &name), REMAT_OK);
    assert_non_null(name);
    assert_true(name[0] != '\0');
    for (uint32_t j = 0; j < i; ++j) {
      const char* other = nullptr;
      assert_int_equal(remat_backend_name(j, &other), REMAT_OK);
      assert_true(strcmp(name, other) != 0);
    }
  }
}

void backend_name_rejects_an_index_past_the_list_and_a_null_out(void**) {
  const uint32_t count = remat_backend_count();
  static const char sentinel[] = "sentinel";
  for (uint32_t index : {count, count + 1, uint32_t{0xffffffff}}) {
    const char* name = sentinel;
    assert_int_equal(remat_backend_name(index, &name), REMAT_ERROR_NOT_FOUND);
    assert_null(name);
  }
  assert_int_equal(remat_backend_name(0, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
}

// Each backend's text names the backend: device lines "NAME:..." or one "(NAME: unavailable...".
void every_backend_lists_its_devices_or_says_why_it_has_none(void**) {
  for (uint32_t i = 0; i < remat_backend_count(); ++i) {
    const char* name = nullptr;
    assert_int_equal(remat_backend_name(i, &name), REMAT_OK);
    char text[8192];
    memset(text, 'z', sizeof(text));
    uint32_t devices = 12345;
    assert_int_equal(remat_backend_devices(i, &devices, text, sizeof(text)), REMAT_OK);
    assert_non_null(memchr(text, '\0', sizeof(text)));
    print_message("  %s: %u device(s)\n%s", name, devices, text);
    const std::string listing(text);
    if (devices == 0) {
      assert_int_equal(listing.find("(" + std::string(name) + ": "), 0);
    } else {
      assert_int_equal(listing.find(std::string(name) + ":"), 0);
    }
    // The count alone is optional.
    assert_int_equal(remat_backend_devices(i, nullptr, text, sizeof(text)), REMAT_OK);
  }
  uint32_t cpu_devices = 0;
  char text[512];
  assert_int_equal(remat_backend_devices(0, &cpu_devices, text, sizeof(text)), REMAT_OK);
  assert_int_equal(cpu_devices, 1);
  assert_int_equal(strncmp(text, "cpu:0", 5), 0);
}

void backend_devices_rejects_bad_index_null_text_and_zero_capacity(void**) {
  char text[64];
  uint32_t devices = 7;
  memset(text, 'z', sizeof(text));
  assert_int_equal(remat_backend_devices(remat_backend_count(), &devices, text, sizeof(text)),
                   REMAT_ERROR_NOT_FOUND);
  assert_int_equal(devices, 0);
  assert_string_equal(text, "");
  devices = 7;
  assert_int_equal(remat_backend_devices(0, &devices, nullptr, 64), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(devices, 0);
  devices = 7;
  text[0] = 'z';
  assert_int_equal(remat_backend_devices(0, &devices, text, 0), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(devices, 0);
  assert_int_equal(text[0], 'z');  // zero capacity: not a byte written
}

void device_text_is_cut_to_the_capacity_and_terminated(void**) {
  for (size_t capacity : {size_t{1}, size_t{2}, size_t{6}}) {
    char text[16];
    memset(text, 'z', sizeof(text));
    uint32_t devices = 0;
    assert_int_equal(remat_backend_devices(0, &devices, text, capacity), REMAT_OK);
    assert_int_equal(devices, 1);  // counted even when the text does not fit
    assert_int_equal(strlen(text), capacity - 1);
    assert_int_equal(strncmp(text, "cpu:0", capacity - 1), 0);
    assert_int_equal(text[capacity], 'z');  // nothing past the capacity
  }
}

// ---- struct_size rules ----------------------------------------------------------------------

// The rules on a struct whose first version was smaller than this library's (as the session
// options will be once a field is appended): every size from the first to the known is fine.
void struct_sizes_from_the_first_version_to_the_known_one_are_accepted(void**) {
  char text[256];
  remat::ErrorBuffer err{text, sizeof(text)};
  for (size_t size : {size_t{24}, size_t{28}, size_t{32}}) {
    assert_int_equal(remat::check_struct_size("thing", size, 24, 32, &err), REMAT_OK);
  }
}

void struct_sizes_outside_first_and_known_are_rejected_naming_both(void**) {
  char text[256];
  remat::ErrorBuffer err{text, sizeof(text)};
  assert_int_equal(remat::check_struct_size("thing", 40, 24, 32, &err),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(text, "thing.struct_size is 40"));
  assert_non_null(strstr(text, "32 bytes this library knows"));
  for (size_t size : {size_t{0}, size_t{8}, size_t{23}}) {
    assert_int_equal(remat::check_struct_size("thing", size, 24, 32, &err),
                     REMAT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(text, ("thing.struct_size is " + std::to_string(size)).c_str()));
    assert_non_null(strstr(text, "24 bytes of its first version"));
    assert_non_null(strstr(text, "knows 32"));
  }
  // No message buffer: the status alone.
  assert_int_equal(remat::check_struct_size("thing", 0, 24, 32, nullptr),
                   REMAT_ERROR_INVALID_ARGUMENT);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(version_reports_this_build_and_the_plan_format_it_reads),
      cmocka_unit_test(version_rejects_null_and_sizes_it_does_not_know_writing_nothing),
      cmocka_unit_test(backends_are_listed_with_cpu_first_and_unique_names),
      cmocka_unit_test(backend_name_rejects_an_index_past_the_list_and_a_null_out),
      cmocka_unit_test(every_backend_lists_its_devices_or_says_why_it_has_none),
      cmocka_unit_test(backend_devices_rejects_bad_index_null_text_and_zero_capacity),
      cmocka_unit_test(device_text_is_cut_to_the_capacity_and_terminated),
      cmocka_unit_test(struct_sizes_from_the_first_version_to_the_known_one_are_accepted),
      cmocka_unit_test(struct_sizes_outside_first_and_known_are_rejected_naming_both),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
