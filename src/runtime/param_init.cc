// Initial values of parameters and optimizer state, drawn from Philox so that every backend
// and every run with the same plan and seed starts from the same bytes. A backend that
// draws_init() (the GPU backends) fills Zeros, Ones and Uniform tensors on the device from the
// same Philox words and formula; the host draws the rest (Normal, i64 zeros elsewhere) and
// uploads them, and uploads Data as it is. Large host draws are shared out among a team of the
// port's threads (each value depends only on its index: the same bits on any thread count).
#include <math.h>

#include "plan/philox.h"
#include "plan/philox_words.h"
#include "runtime/port.h"
#include "runtime/session.h"

namespace remat {
namespace {

constexpr uint64_t kInitStream = REMAT_PHILOX_INIT_STEP;
// Values are drawn into a small chunk on the stack (firmware stacks are small). Device backends
// pay per upload call (a blocking write each), so they stage through a larger buffer from the
// port, freed before creation returns; device backends only run on hosted ports, so this never
// takes from a bare-metal pool.
constexpr int kChunk = 256;
// A tensor the host draws (Normal: word embeddings, 31 million values in BERT-large, about two
// seconds on one thread) of at least this many elements is drawn by a team of the port's
// threads, through a staging buffer of kTeamChunk floats; the values are the same.
constexpr int64_t kTeamMinElements = int64_t{1} << 16;
constexpr int64_t kTeamChunk = int64_t{1} << 20;

// out[k] = element at + k of |tensor|, k < count: Uniform takes word i of the tensor's stream,
// Normal words 2i and 2i + 1 (Box-Muller); each Philox group of four words is computed once for
// the elements that share it.
void draw(fb::Init init, float scale, uint64_t seed, uint32_t tensor, uint64_t at, int64_t count,
          float* out) {
  PhiloxWords word(seed, kInitStream, tensor);
  for (int64_t k = 0; k < count; ++k) {
    const uint64_t i = at + static_cast<uint64_t>(k);
    switch (init) {
      case fb::Init::Ones: out[k] = 1.0f; break;
      case fb::Init::Uniform: out[k] = uniform_init(word(i), scale); break;
      case fb::Init::Normal: {
        // Box-Muller on two words of the stream; u1 kept away from 0 for the log.
        const float u1 = (static_cast<float>(word(2 * i) >> 8) + 1.0f) * (1.0f / 16777217.0f);
        const float u2 = uniform01(word(2 * i + 1));
        out[k] = scale * sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
        break;
      }
      default: out[k] = 0.0f; break;  // Zeros
    }
  }
}

// The rule of |x| as a device backend draws it, or false where the host must draw it (Normal's
// logf and cosf are glibc's, which no device reproduces bit for bit; Data is the plan's bytes).
bool device_rule(const fb::Tensor* x, uint64_t seed, uint32_t tensor, InitDraw* rule) {
  switch (x->init()) {
    case fb::Init::Zeros: *rule = {InitDraw::kZeros, 0.0f, seed, tensor}; return true;
    case fb::Init::Ones: *rule = {InitDraw::kOnes, 0.0f, seed, tensor}; return true;
    case fb::Init::Uniform:
      *rule = {InitDraw::kUniform, x->init_scale(), seed, tensor};
      return true;
    default: return false;
  }
}

// Elements [at, at + count) of host-drawn tensor |tensor| into |chunk|, shared out among the
// |threads| members of a team: member i draws the i-th of |threads| equal runs.
struct TeamDraw {
  fb::Init init;
  float scale;
  uint64_t seed;
  uint32_t tensor;
  int64_t at, count;
  float* chunk;
  uint32_t threads;
};

void draw_run(void* context, uint32_t index) {
  const TeamDraw& d = *static_cast<const TeamDraw*>(context);
  const int64_t per = (d.count + d.threads - 1) / d.threads;
  const int64_t begin = per * index, end = begin + per < d.count ? begin + per : d.count;
  if (begin < end) {
    draw(d.init, d.scale, d.seed, d.tensor, static_cast<uint64_t>(d.at + begin), end - begin,
         d.chunk + begin);
  }
}

// A team and its staging buffer for large host draws, made on first need and kept until the
// parameters are drawn; none where the port has no threads or no memory to spare.
struct DrawTeam {
  PortTeam* team = nullptr;
  float* chunk = nullptr;
  uint32_t threads = 0;
  bool tried = false;

  // |limit|: the session's threads option (0: every hardware thread).
  bool ready(size_t limit) {
    if (!tried) {
      tried = true;
      const uint32_t all = port_hardware_threads();
      const uint32_t n = limit != 0 && limit < all ? static_cast<uint32_t>(limit) : all;
      if (n > 1) {
        chunk = static_cast<float*>(port_alloc(kTeamChunk * sizeof(float), 64));
        team = chunk != nullptr ? port_team_create(n) : nullptr;
        threads = team != nullptr ? n : 0;
      }
    }
    return team != nullptr;
  }
  ~DrawTeam() {
    port_team_destroy(team);
    port_free(chunk);
  }
};

}  // namespace

remat_status initialise_persistent(remat_session* s, size_t threads) {
  const fb::Plan* plan = s->plan->root;
  float stack_chunk[kChunk];
  float* chunk = stack_chunk;
  int64_t capacity = kChunk;
  float* staging = nullptr;
  const uint32_t staging_floats = s->backend->profile().staging_bytes / sizeof(float);
  if (staging_floats > kChunk) {
    staging = static_cast<float*>(port_alloc(staging_floats * sizeof(float), 64));
    if (staging != nullptr) {  // Without it, the stack chunk still works, in more calls.
      chunk = staging;
      capacity = staging_floats;
    }
  }
  remat_status status = REMAT_OK;
  DrawTeam team;
  for (uint32_t t = 0; t < plan->tensors()->size() && status == REMAT_OK; ++t) {
    const fb::Tensor* x = plan->tensors()->Get(t);
    if (x->init() == fb::Init::None || x->region() != fb::Region::Persistent) continue;
    const TensorRef& ref = s->tensors[t];
    InitDraw rule;
    if (s->backend->draws_init() && device_rule(x, plan->seed(), t, &rule)) {
      status = s->backend->draw_init(ref, rule, &s->err);
      continue;
    }
    if (x->init() == fb::Init::Data) {  // the plan's bytes, as they are (plan_verify.cc sized them)
      status =
          s->backend->upload(ref.region, ref.offset, x->init_data()->data(), ref.bytes, &s->err);
      continue;
    }
    if (x->dtype() == fb::DType::I64) {  // zeros, the one init of i64 (plan_verify.cc)
      const uint64_t chunk_bytes = static_cast<uint64_t>(capacity) * sizeof(float);
      for (uint64_t at = 0; at < ref.bytes && status == REMAT_OK; at += chunk_bytes) {
        const uint64_t count = ref.bytes - at < chunk_bytes ? ref.bytes - at : chunk_bytes;
        memset(chunk, 0, count);
        status = s->backend->upload(ref.region, ref.offset + at, chunk, count, &s->err);
      }
      continue;
    }
    if (ref.numel >= kTeamMinElements && team.ready(threads)) {
      for (int64_t at = 0; at < ref.numel && status == REMAT_OK; at += kTeamChunk) {
        const int64_t count = ref.numel - at < kTeamChunk ? ref.numel - at : kTeamChunk;
        TeamDraw d{x->init(), x->init_scale(), plan->seed(), t,
                   at,        count,           team.chunk,   team.threads};
        port_team_run(team.team, draw_run, &d);
        status = s->backend->upload(ref.region, ref.offset + static_cast<uint64_t>(at) * 4,
                                    team.chunk, static_cast<uint64_t>(count) * 4, &s->err);
      }
      continue;
    }
    for (int64_t at = 0; at < ref.numel && status == REMAT_OK; at += capacity) {
      const int64_t count = ref.numel - at < capacity ? ref.numel - at : capacity;
      draw(x->init(), x->init_scale(), plan->seed(), t, static_cast<uint64_t>(at), count, chunk);
      status = s->backend->upload(ref.region, ref.offset + static_cast<uint64_t>(at) * 4, chunk,
                                  static_cast<uint64_t>(count) * 4, &s->err);
    }
  }
  port_free(staging);
  return status;
}

}  // namespace remat
