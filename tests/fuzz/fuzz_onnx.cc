// libFuzzer target: untrusted ONNX bytes -> the importer (compiler/onnx/import.h) at batch 2.
//
// Input: one control byte (bit 0: --loss mse, else cross_entropy), then the model's bytes.
// What it holds the importer to (docs/onnx.md): any bytes give a graph or a CompileError naming
// what is wrong, never a crash, a leak, undefined behaviour (ASan + UBSan build) or another
// exception.
//
// Seeds: tests/data/onnx/*.onnx behind control bytes 0x00 and 0x01 (tests/fuzz/run.sh makes them).
// Run: tests/fuzz/run.sh, or by hand
//   build-fuzz/tests/fuzz/fuzz_onnx CORPUS_DIR SEED_DIR      (docs/fuzzing.md)
#include <stddef.h>
#include <stdint.h>

#include <string>

#include "compiler/graph.h"
#include "compiler/onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto loss = (data[0] & 1) != 0 ? remat::compiler::OnnxLoss::kMse
                                       : remat::compiler::OnnxLoss::kCrossEntropy;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    remat::compiler::import_onnx_bytes(bytes, "fuzz.onnx", 2, loss,
                                       remat::compiler::AttentionKernel::kFused);
  } catch (const remat::compiler::CompileError&) {
    // The expected answer to a bad model.
  }
  return 0;
}
