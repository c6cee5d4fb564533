// --communicator and the rank's device (cli/rank_communicator.h).
#include "cli/rank_communicator.h"

#include "cli/cli_args.h"
#include "comm/mpi_communicator.h"
#include "plan/allreduce_slots.h"
#include "plan/ops.h"
#include "plan/plan_generated.h"

namespace remat {
namespace cli {

RankCommunicator rank_communicator(const std::string& backend, const std::string& communicator) {
  const bool any_cuda = backend == "cuda";
  const bool numbered_cuda = backend.compare(0, 5, "cuda:") == 0;
  const std::string chosen =
      !communicator.empty() ? communicator
                            : ((any_cuda || numbered_cuda) && comm::nccl_built() ? "nccl" : "mpi");
  if (chosen != "mpi" && chosen != "nccl")
    throw UsageError("--communicator " + chosen + ": expected mpi or nccl");
  RankCommunicator r{comm::MpiWorld::kNoNccl, false, communicator.empty() && chosen == "nccl"};
  if (chosen == "mpi") return r;
  if (!any_cuda && !numbered_cuda) {
    throw UsageError(
        "--communicator nccl sums in CUDA device memory: it needs --backend cuda or "
        "cuda:N, not " +
        backend);
  }
  if (any_cuda) {
    r.nccl_device = comm::MpiWorld::kLocalRankDevice;
    r.device_per_rank = true;
    return r;
  }
  const std::string number = backend.substr(5);
  if (number.empty() || number.size() > 4 ||
      number.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("--backend " + backend + ": expected cuda or cuda:N, N a device number");
  r.nccl_device = std::stoi(number);
  return r;
}

std::string sums_description(const remat_communicator& c, const std::string& backend,
                             const std::vector<uint8_t>& plan) {
  if (c.memory == REMAT_MEMORY_CUDA) return "NCCL on cuda:" + std::to_string(c.device);
  if (backend.compare(0, 6, "opencl") != 0 && backend.compare(0, 4, "cuda") != 0) return "MPI";
  const fb::Plan* root = fb::GetPlan(plan.data());
  uint64_t slots = 0;
  for (const fb::Op* op : *root->ops()) {
    if (op->code() != static_cast<uint16_t>(OpCode::kAllreduceStart) || op->inputs() == nullptr)
      continue;
    for (uint32_t t : *op->inputs()) {
      uint64_t numel = 1;
      for (int64_t d : *root->tensors()->Get(t)->shape()) numel *= static_cast<uint64_t>(d);
      slots += allreduce_slot_array_bytes(numel);
    }
  }
  return "MPI, through host copies of " + format_bytes(allreduce_slot_pages(slots));
}

}  // namespace cli
}  // namespace remat
