// Inputs a hostile or careless user gives the command line: endless devices, pipes whose header
// claims terabytes, directories, files longer or shorter than their header says. Each is
// refused with a message naming the file, holding no more memory than its header's claim (the
// first test runs remat under `ulimit -v`, which AddressSanitizer's shadow memory cannot).
#include "tests/cmocka_cpp.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "io/safetensors.h"
#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

const char kMlp[] = "mlp:layers=2,width=8,in=4,classes=3";

std::string compiled_mlp() {
  const std::string plan = tmp("inputs.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 2 -o " + plan), 0, "wrote");
  return plan;
}

// A safetensors header (with its length) claiming one F32 tensor 'x' of |bytes| bytes, and no data.
std::string claim_of(uint64_t bytes) {
  const std::string json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(bytes / 4) +
                           "],\"data_offsets\":[0," + std::to_string(bytes) + "]}}";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr || fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    fail_msg("cannot write %s", path.c_str());
  fclose(f);
}

}  // namespace

// /dev/zero never ends: each file flag reads its 8-byte length and its header (an empty one)
// and stops. A pipe whose header claims 400 GB is refused before a byte of its data is read.
// Under a 3 GiB address-space limit, none of them can have held more.
static void endless_inputs_are_refused_within_bounded_memory(void**) {
  const std::string plan = compiled_mlp();
  const std::string limit = kSanitized ? "" : "ulimit -v 3000000;";
  const std::string train = "train " + plan + " --steps 1";
  expect(run_remat(train + " --data /dev/zero", limit), 1,
         "/dev/zero: header byte 0: expected '{'");
  expect(run_remat(train + " --load-params /dev/zero", limit), 1, "/dev/zero: header byte 0");
  expect(run_remat(train + " --eval-every 1 --eval-data /dev/zero", limit), 1,
         "/dev/zero: header byte 0");
  expect(run_remat("inspect /dev/zero", limit), 1, "/dev/zero: plan corrupt: not a remat plan");
  const std::string claim = tmp("claim.safetensors");
  write_bytes(claim, claim_of(400000000000ull));
  const Result piped =
      run_remat(train + " --data /dev/stdin", limit + " cat " + claim + " /dev/zero |");
  expect(piped, 1, "/dev/stdin: its header describes 400000000");
  expect(piped, 1, "-byte limit of a pipe or device (half of this machine's memory)");
  // An end offset that would wrap 8 + header + data around 2^64 to a small size.
  const std::string json = "{\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,X]}}";
  const uint64_t header = json.size() - 1 + 20;  // X is written with 20 digits
  const std::string wrap = tmp("wrap.safetensors");
  {
    std::string text = json;
    text.replace(text.find('X'), 1, std::to_string(UINT64_MAX - 8 - header + 17));
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
    write_bytes(wrap, bytes + text);
  }
  expect(run_remat(train + " --data /dev/stdin", limit + " cat " + wrap + " /dev/zero |"), 1,
         "-byte limit of a pipe or device");
  // A header length past the 100 MB a safetensors header may have.
  expect(run_remat(train + " --data /dev/urandom", limit), 1,
         "is over the 104857600-byte limit of a safetensors header");
}

// A regular file must be exactly as long as its header says: shorter (truncated) or longer
// (bytes appended) is refused naming both sizes; a directory is named as one.
static void a_file_of_another_length_than_its_header_says_is_refused(void**) {
  const std::string plan = compiled_mlp();
  const std::string train = "train " + plan + " --steps 1";
  const std::string claim = tmp("short.safetensors");
  write_bytes(claim, claim_of(400000000000ull));
  expect(run_remat(train + " --data " + claim), 1, "short.safetensors: file is ");
  expect(run_remat(train + " --data " + claim), 1, "bytes, its header describes 400000000");
  // Parameters saved, then 4 KB of garbage after them.
  const std::string saved = tmp("params.safetensors");
  expect(run_remat(std::string("train ") + kMlp + " --batch 2 --steps 0 --save-params " + saved), 0,
         "saved parameters");
  FILE* f = fopen(saved.c_str(), "ab");
  const std::vector<char> garbage(4096, 'x');
  assert_int_equal(fwrite(garbage.data(), 1, garbage.size(), f), garbage.size());
  fclose(f);
  expect(run_remat(train + " --load-params " + saved), 1, "params.safetensors: file is ");
  expect(run_remat(train + " --data /tmp"), 1, "/tmp: is a directory, not a safetensors file");
  expect(run_remat("inspect /tmp"), 1, "'/tmp' is a directory, not a remat plan");
  expect(run_remat("inspect /dev/null"), 1, "'/dev/null' is empty (0 bytes): not a remat plan");
}

// --load-params takes a file of parameters without the buffers (a batch norm's running
// statistics and counter): they keep the values the plan starts them at. A missing parameter is
// still refused, naming it.
static void load_params_takes_a_file_without_the_buffers(void**) {
  const std::string cnn = "train cnn:channels=4x8,in=3x8x8,classes=2 --batch 2 --threads 1";
  const std::string saved = tmp("cnn_init.safetensors");
  expect(run_remat(cnn + " --steps 0 --save-params " + saved), 0, "saved parameters");
  remat::SafeTensorsFile all, params_only;
  std::string error;
  assert_true(remat::read_safetensors(saved, &all, &error));
  size_t buffers = 0;
  for (const remat::SafeTensor& t : all.tensors) {
    const bool buffer = t.name.find("running_") != std::string::npos ||
                        t.name.find("num_batches_tracked") != std::string::npos;
    buffers += buffer;
    if (!buffer) params_only.tensors.push_back(t);
  }
  assert_true(buffers == 6);  // two batch norms, three buffers each
  const std::string lean = tmp("cnn_params_only.safetensors");
  assert_true(remat::write_safetensors(lean, params_only, &error));
  const std::string a = tmp("cnn_a.safetensors"), b = tmp("cnn_b.safetensors");
  expect(run_remat(cnn + " --steps 3 --load-params " + saved + " --save-params " + a), 0,
         "saved parameters");
  expect(run_remat(cnn + " --steps 3 --load-params " + lean + " --save-params " + b), 0,
         "saved parameters");
  if (remat_test::file_bytes(a) != remat_test::file_bytes(b))
    fail_msg("training from the file without buffers differs");
  const std::string dropped = params_only.tensors.front().name;
  params_only.tensors.erase(params_only.tensors.begin());
  assert_true(remat::write_safetensors(lean, params_only, &error));
  expect(run_remat(cnn + " --steps 1 --load-params " + lean), 1,
         ("no tensor '" + dropped + "' (a parameter of the plan)").c_str());
}

// A save that cannot be written says why: the file-size limit (as a full disk would) makes the
// state's write fail with EFBIG, and the message carries the system's reason, not only
// "the writer failed"; no temporary is left.
static void a_failed_state_save_says_why(void**) {
  const std::string state = tmp("too_big.state");
  remove(state.c_str());
  const Result r = run_remat(
      "train transformer:layers=2,hidden=64,heads=2,ffn=128,seq=8,vocab=50,classes=3 --batch 4 "
      "--steps 2 --optimizer adam:lr=0.01 --state " +
          state,
      "ulimit -f 4; trap '' XFSZ;");
  expect(r, 1,
         ("remat train: saving the state: " + state + ": write failed: File too large").c_str());
  FILE* f = fopen(state.c_str(), "rb");
  if (f != nullptr) {
    fclose(f);
    fail_msg("a state was written");
  }
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(endless_inputs_are_refused_within_bounded_memory),
      cmocka_unit_test(a_file_of_another_length_than_its_header_says_is_refused),
      cmocka_unit_test(load_params_takes_a_file_without_the_buffers),
      cmocka_unit_test(a_failed_state_save_says_why),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
