// The host slots of a data-parallel plan's buckets (host_staging.h).
#include "backends/gpu/host_staging.h"

#include "backends/shared/allreduce_calls.h"
#include "plan/ops.h"
#include "runtime/port.h"

namespace remat {
namespace gpu {
namespace {

constexpr uint64_t kUnplaced = ~uint64_t{0};

bool starts_a_bucket(const OpCall& call) {
  return call.code == static_cast<uint16_t>(OpCode::kAllreduceStart);
}

}  // namespace

HostStaging::~HostStaging() { release(); }

void HostStaging::release() {
  port_free(memory_);
  port_free(offsets_);
  memory_ = nullptr;
  offsets_ = nullptr;
  bytes_ = 0;
  buckets_ = 0;
}

uint64_t HostStaging::array_bytes(const TensorRef& t) {
  return allreduce_slot_array_bytes(static_cast<uint64_t>(t.numel));
}

remat_status HostStaging::prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) {
  release();
  uint32_t buckets = 0;
  for (uint32_t i = 0; i < count; ++i) buckets += starts_a_bucket(calls[i]) ? 1 : 0;
  if (buckets == 0) return REMAT_OK;
  offsets_ = static_cast<uint64_t*>(port_alloc(buckets * sizeof(uint64_t), alignof(uint64_t)));
  if (offsets_ == nullptr) {
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED,
                     "no host memory for the table of %u buckets", static_cast<unsigned>(buckets));
  }
  buckets_ = buckets;
  for (uint32_t b = 0; b < buckets; ++b) offsets_[b] = kUnplaced;
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const OpCall& call = calls[i];
    if (!starts_a_bucket(call)) continue;
    const uint32_t bucket = allreduce_bucket(call);
    if (bucket >= buckets || offsets_[bucket] != kUnplaced) {
      const remat_status status =
          set_error(err, REMAT_ERROR_FAILED_PRECONDITION, "op %u (allreduce_start): bucket %u %s",
                    static_cast<unsigned>(call.index), static_cast<unsigned>(bucket),
                    bucket >= buckets ? "is past the plan's buckets" : "is started twice");
      release();
      return status;
    }
    offsets_[bucket] = total;
    for (int k = 0; k < call.num_inputs; ++k) total += array_bytes(*call.inputs[k]);
  }
  memory_ = static_cast<uint8_t*>(port_alloc(allreduce_slot_pages(total), kAllreduceSlotPageBytes));
  if (memory_ == nullptr && total != 0) {
    release();
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED,
                     "no host memory for the %llu bytes of the all-reduce buckets' host copies",
                     static_cast<unsigned long long>(total));
  }
  bytes_ = total;
  return REMAT_OK;
}

uint8_t* HostStaging::slot(uint32_t bucket) const {
  if (bucket >= buckets_ || memory_ == nullptr) return nullptr;
  return memory_ + offsets_[bucket];
}

}  // namespace gpu
}  // namespace remat
