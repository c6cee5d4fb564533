// The null backend: a skeleton to copy when adding a backend. It implements no op; every entry
// that a real backend fills in says so with a COPY-ME marker and returns UNIMPLEMENTED.
//
// Adding a backend (docs/backends.md, "Adding a backend"):
//   1. Copy this folder to backends/NAME, rename null -> NAME in file and symbol names.
//   2. State the device's facts in NAME_profile.h and list the profile in
//      backends/device_profiles.h.
//   3. Fill in each COPY-ME below; give each op a kernel and an entry in the dispatch table,
//      which is built from the op catalogue (backends/shared/op_table.h).
//   4. Add `subdir('backends/NAME')` to the root meson.build; the conformance suite then runs
//      as backend_conformance_NAME.
#include <new>
#include <stdio.h>

#include "backends/null/null_profile.h"
#include "backends/shared/op_table.h"
#include "runtime/backend.h"
#include "runtime/port.h"

namespace remat {
namespace {

class NullBackend;

/// A kernel of this backend: runs one op on |backend|.
using NullKernel = remat_status (*)(NullBackend& backend, const OpCall& call,
                                    const StepContext& ctx, ErrorBuffer* err);

// COPY-ME: fill the table from the catalogue once every op has a kernel, as
// backends/cpu/kernel_table.cc does, or set the ops you have one by one:
//   t.fn[static_cast<uint16_t>(OpCode::kAdd)] = add;
constexpr OpTable<NullKernel> make_table() { return OpTable<NullKernel>{}; }

constexpr OpTable<NullKernel> kTable = make_table();

class NullBackend final : public Backend {
 public:
  const DeviceProfile& profile() const override { return kNullProfile; }

  bool supports_op(uint16_t code) const override { return kTable.find(code) != nullptr; }

  remat_status run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) override {
    const NullKernel kernel = kTable.find(call.code);
    if (kernel == nullptr) {
      return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                       "op %u (%s): not implemented by the %s backend", call.index,
                       op_name(call.code), name());
    }
    return kernel(*this, call, ctx, err);
  }

  // COPY-ME: copy |bytes| from host |src| into the device region at |offset|; refuse bytes
  // that reach past the region with REMAT_ERROR_OUT_OF_REGION (a_copy_past_a_region_is_refused).
  remat_status upload(Region, uint64_t, const void*, uint64_t, ErrorBuffer* err) override {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED, "null backend: upload is not implemented");
  }

  // COPY-ME: copy |bytes| from the device region at |offset| to host |dst|, as upload checks.
  remat_status download(Region, uint64_t, void*, uint64_t, ErrorBuffer* err) override {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED, "null backend: download is not implemented");
  }

  // begin_step, end_step and sync keep Backend's defaults (nothing is ever queued). COPY-ME:
  // a device with queues waits for them in sync().
};

}  // namespace

// COPY-ME: open the device |device| names ("" is the default one) and allocate its regions
// (regions.arena_bytes and persistent_bytes at regions.alignment), once: no allocation after
// this returns. The backend object itself lives in port memory.
remat_status create_null_backend(const char* device, const RegionSetup&, Backend** out_backend,
                                 ErrorBuffer* err) {
  if (device[0] != '\0' && !(device[0] == '0' && device[1] == '\0')) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "null backend has one device, 0; got '%s'",
                     device);
  }
  void* memory = port_alloc(sizeof(NullBackend), alignof(NullBackend));
  if (memory == nullptr) {
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for the null backend");
  }
  *out_backend = new (memory) NullBackend();
  return REMAT_OK;
}

// COPY-ME: list the devices this backend reaches here, one line each, or one line saying why
// it reaches none (backend_registry.h, DeviceLister).
int list_null_devices(char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return -1;
  snprintf(out, capacity, "null:0  skeleton backend (runs no op; backends/null)\n");
  return 1;
}

}  // namespace remat
