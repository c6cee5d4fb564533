/* remat runtime: load a training plan, bind memory, run training steps. C ABI.
 *
 * Ownership, once for the whole API:
 * - The caller owns the plan bytes. remat_plan_open() does not copy them (zero-copy); they must
 *   be 8-byte aligned and stay alive and unchanged until the plan and every session made from
 *   it are destroyed.
 * - The caller owns the arena (and, if given, the persistent and host regions) passed in
 *   remat_session_options. They must outlive the session. The library never frees them.
 * - Handles (remat_plan*, remat_session*) are allocated once, at open/create, through the port's
 *   allocator, and freed by the matching _close/_destroy. After remat_session_create() returns,
 *   no call allocates memory.
 * - Strings returned by the library (names, messages) live as long as the object they came from;
 *   names of backends live as long as the library is loaded.
 * - Text the library writes for the caller (messages, device lists) goes into the caller's
 *   buffer, always NUL-terminated and cut to the capacity the caller gives.
 * - A library built without messages (meson -Dmessages=disabled, firmware builds' default)
 *   writes, where a message is described below, "status S at FILE:LINE: N N ...": the status,
 *   the source line that failed and the message's integer values (docs/firmware.md).
 *
 * Structs whose first field is |struct_size| (remat_session_options, remat_version_info), once
 * for the whole API:
 * - The caller sets |struct_size| to sizeof the struct as its own header declares it (the
 *   _init function, where there is one, does it).
 * - A struct from an older header is smaller; it is accepted: fields it lacks take their
 *   defaults (for a struct the library fills, they are not written).
 * - A struct larger than this library knows (a newer header against an older library) is
 *   rejected with REMAT_ERROR_INVALID_ARGUMENT and a message naming both sizes, as is one too
 *   small to hold the fields of the struct's first version (REMAT_API_VERSION 1: every field
 *   declared below; a later version only appends fields).
 *
 * Memory a session uses (offsets in each region are decided by the compiler):
 *
 *   arena       [ activations | checkpoints | gradients | scratch | batch inputs ]  reused op by op
 *   persistent  [ params | optimizer state | loss ]                                 lives all run
 *   host        [ spill slots ]                                                     host memory
 *
 * Threading: no global mutable state; one session is used by one thread at a time.
 */
#ifndef REMAT_REMAT_H_
#define REMAT_REMAT_H_

#include <stddef.h>
#include <stdint.h>

/* REMAT_API marks what the shared library exports; everything else in it is hidden. On
 * Windows, the library's own build defines REMAT_BUILDING_LIBRARY and a program linking a
 * static build defines REMAT_STATIC. Define REMAT_API before including this header to override. */
#if !defined(REMAT_API)
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(REMAT_BUILDING_LIBRARY)
#define REMAT_API __declspec(dllexport)
#elif defined(REMAT_STATIC)
#define REMAT_API
#else
#define REMAT_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define REMAT_API __attribute__((visibility("default")))
#else
#define REMAT_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this API. Bumped when a declaration changes incompatibly; the shared library's
 *  SONAME carries it (libremat.so.1). remat_version() says what the loaded library has. */
#define REMAT_API_VERSION 1

/** Version of the plan format the compiler writes: 2 added the eval program, 3 initial values
 *  carried in the plan (an imported model's weights), 4 the checksum every plan carries (a
 *  version 4 plan without one, or whose bytes do not match it, is REMAT_ERROR_PLAN_CORRUPT). */
#define REMAT_PLAN_FORMAT_VERSION 4

/** Oldest plan format version this runtime reads (a version 1 plan has no eval program). A plan
 *  of a version outside REMAT_PLAN_FORMAT_OLDEST_VERSION..REMAT_PLAN_FORMAT_VERSION is rejected. */
#define REMAT_PLAN_FORMAT_OLDEST_VERSION 1

/** Most dimensions a tensor may have. */
#define REMAT_MAX_RANK 6

/** Result of every fallible call. Append-only: values never change meaning. */
typedef enum remat_status {
  /** Success. */
  REMAT_OK = 0,
  /** A caller-supplied argument is wrong: a null pointer, a size that does not match, an
   *  options struct of an unknown size. */
  REMAT_ERROR_INVALID_ARGUMENT = 1,
  /** The plan bytes are not a well-formed plan: truncated, or they fail the FlatBuffers
   *  verifier (for example after a flipped byte), or its data flow is broken: an op reads a
   *  tensor nothing has written (a persistent one read before any op writes it needs an init),
   *  an input no binding names, a copy never waited for (docs/plan-format.md). */
  REMAT_ERROR_PLAN_CORRUPT = 2,
  /** The plan's format version is outside REMAT_PLAN_FORMAT_OLDEST_VERSION..
   *  REMAT_PLAN_FORMAT_VERSION. */
  REMAT_ERROR_PLAN_VERSION = 3,
  /** The plan contains an opcode this runtime does not know. */
  REMAT_ERROR_UNKNOWN_OP = 4,
  /** An op has the wrong number of inputs, outputs or attributes. */
  REMAT_ERROR_BAD_ARITY = 5,
  /** An op's tensor shapes or attribute values are inconsistent with what the op computes. */
  REMAT_ERROR_BAD_SHAPE = 6,
  /** An op's tensor has a dtype the op does not take. */
  REMAT_ERROR_BAD_DTYPE = 7,
  /** A tensor's offset plus size lies outside its region, or it is misaligned, or a tensor,
   *  binding or op refers to a tensor index that does not exist. */
  REMAT_ERROR_OUT_OF_REGION = 8,
  /** Two tensors that are live at the same op share bytes. */
  REMAT_ERROR_OVERLAP = 9,
  /** A memory region given to the session is smaller than the plan needs. (A misaligned one
   *  is REMAT_ERROR_MISALIGNED.) */
  REMAT_ERROR_ARENA_TOO_SMALL = 10,
  /** A name (parameter, input) is not in the plan. */
  REMAT_ERROR_NOT_FOUND = 11,
  /** Data given at step time is outside its valid range (a label or token id too large). */
  REMAT_ERROR_OUT_OF_RANGE = 12,
  /** The requested backend or device is not available on this machine or build. */
  REMAT_ERROR_UNAVAILABLE = 13,
  /** Memory could not be obtained when the session was created. */
  REMAT_ERROR_RESOURCE_EXHAUSTED = 14,
  /** A call was made in a state that does not allow it (a step before every input was set). */
  REMAT_ERROR_FAILED_PRECONDITION = 15,
  /** The backend does not implement an op the plan uses. */
  REMAT_ERROR_UNIMPLEMENTED = 16,
  /** A fault inside the library or a device; the message says what. */
  REMAT_ERROR_INTERNAL = 17,
  /** Caller memory (plan bytes, arena, persistent or host region) does not start at the
   *  alignment it needs; the message names the region, its address and the alignment. */
  REMAT_ERROR_MISALIGNED = 18,
  /** A training state belongs to another plan (its fingerprint differs) or was written in a
   *  state format this library does not read; the message names both. */
  REMAT_ERROR_STATE_MISMATCH = 19,
  /** A training state is corrupt or truncated: its checksum, size or layout is wrong. */
  REMAT_ERROR_DATA_LOSS = 20,
  /** A caller-supplied callback (a state writer or reader, a communicator) reported failure. */
  REMAT_ERROR_CALLBACK = 21,
  /** A step's loss or a gradient holds a NaN or an infinity (the plan's finite checks found
   *  it): the updates after that check were skipped (see remat_session_step), the step count
   *  advanced. The message names the tensor, the element and its value. */
  REMAT_ERROR_NONFINITE = 22
} remat_status;

/** Element types. Values are stored in plans. */
typedef enum remat_dtype {
  REMAT_DTYPE_F32 = 0,
  /** IEEE binary16, 2 bytes. Any float operand of an op may be f16 (each tensor its own float
   *  dtype); parameters, optimizer state, inputs, labels, outputs and the loss may not: what
   *  the caller writes and reads by name is f32 (or an integer), so remat_session_set_input,
   *  remat_session_read_param and remat_session_read_output never convert, and a plan that
   *  binds a 16-bit tensor is refused at remat_plan_open (REMAT_ERROR_BAD_DTYPE, naming it).
   *  The CPU, OpenCL and CUDA backends compute in f32 and round 16-bit results once, to
   *  nearest even, with the same bits; a backend that runs f32 only refuses such a plan at
   *  session creation (REMAT_ERROR_UNIMPLEMENTED). */
  REMAT_DTYPE_F16 = 1,
  /** bfloat16 (the top 16 bits of an IEEE binary32), 2 bytes; as REMAT_DTYPE_F16. */
  REMAT_DTYPE_BF16 = 2,
  REMAT_DTYPE_I32 = 3,
  /** 64-bit signed integers: a batch norm's num_batches_tracked (a REMAT_BINDING_BUFFER). */
  REMAT_DTYPE_I64 = 4
} remat_dtype;

/** Which set of named tensors a binding query refers to. */
typedef enum remat_binding_kind {
  REMAT_BINDING_INPUT = 0,  /**< Batch data the caller writes before each step. */
  REMAT_BINDING_LABEL = 1,  /**< Targets the caller writes before each step. */
  REMAT_BINDING_PARAM = 2,  /**< Trainable parameters. */
  REMAT_BINDING_OUTPUT = 3, /**< What the eval program computes for the caller (the logits). */
  /** Persistent state besides the parameters, which steps update and the caller may read and
   *  write like a parameter (torch's buffers: a batch norm's running_mean, running_var and
   *  num_batches_tracked, the last i64). */
  REMAT_BINDING_BUFFER = 4
} remat_binding_kind;

/** The precision a plan asks of its matrix products (`remat compile --matmul-precision`). */
typedef enum remat_matmul_precision {
  REMAT_MATMUL_PRECISION_FP32 = 0, /**< Float32 products: every backend, and the default. */
  /** Inputs rounded to TF32, float32 sums, where the backend has it (CUDA's tensor cores); the
   *  CPU and OpenCL backends compute float32 products (docs/backends.md). */
  REMAT_MATMUL_PRECISION_TF32 = 1
} remat_matmul_precision;

/** A verified plan. Opaque. */
typedef struct remat_plan remat_plan;
/** A training session: a plan bound to memory and a backend. Opaque. */
typedef struct remat_session remat_session;

/** Describes one named tensor of a plan. Filled by remat_plan_binding(). */
typedef struct remat_tensor_info {
  const char* name;             /**< Name as in the model, e.g. "fc0.weight". */
  remat_dtype dtype;            /**< Element type. */
  uint32_t rank;                /**< Number of dims used in |dims|. */
  int64_t dims[REMAT_MAX_RANK]; /**< Shape, outermost first. */
  uint64_t bytes;               /**< Size in bytes. */
} remat_tensor_info;

/** Sizes a plan needs. Filled by remat_plan_memory(). */
typedef struct remat_plan_memory_info {
  uint64_t arena_bytes;      /**< Bytes of the arena region. */
  uint64_t persistent_bytes; /**< Bytes of the persistent region. */
  uint64_t host_bytes;       /**< Bytes of the host spill region (0 when nothing spills). */
  uint32_t alignment;        /**< Alignment, in bytes, each region's base must have. */
} remat_plan_memory_info;

/** The loaded library's version. Filled by remat_version(). */
typedef struct remat_version_info {
  /** sizeof(remat_version_info), set by the caller (see the struct_size rules at the top). */
  size_t struct_size;
  /** The library's release: major.minor.patch. */
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
  /** REMAT_API_VERSION the library was built with. A caller built against another value
   *  should not use it. */
  uint32_t api_version;
  /** Oldest and newest plan format versions the library reads (REMAT_PLAN_FORMAT_OLDEST_VERSION
   *  and REMAT_PLAN_FORMAT_VERSION of its build). */
  uint32_t plan_format_min;
  uint32_t plan_format_max;
} remat_version_info;

/** A float32 array for a communicator: in host memory (the arena's bytes on the CPU backend, a
 *  host copy of them on the GPU backends), or the cuda backend's tensor itself in device memory
 *  for a communicator of REMAT_MEMORY_CUDA. */
typedef struct remat_buffer {
  float* data;    /**< First element. */
  uint64_t count; /**< Number of elements. */
} remat_buffer;

/** Where a communicator's arrays are (remat_communicator.memory). */
typedef enum remat_memory {
  /** Host memory: the arena on the CPU backend, host copies of the tensors on the GPU backends. */
  REMAT_MEMORY_HOST = 0,
  /** CUDA device memory, remat_communicator.device's: the cuda backend's tensors themselves, no
   *  copies (libremat_mpi's NCCL communicator). Only a session on that device's cuda backend
   *  takes such a communicator. */
  REMAT_MEMORY_CUDA = 1
} remat_memory;

/** Data-parallel training (docs/data-parallel.md): how a session of one rank sums gradients
 *  with the other ranks' sessions. A plan compiled for data-parallel training (`remat compile
 *  --data-parallel`) holds allreduce_start / allreduce_wait op pairs on buckets of gradients;
 *  the session calls |allreduce_start| at the first, |allreduce_wait| at the second, then divides
 *  the sums by |size|. Every rank runs the same plan, so the calls come in the same order on
 *  every rank, one bucket at a time; a session calls |allreduce_wait| for every bucket it
 *  started, also when its step stops early. libremat_mpi gives MPI's (remat/remat_mpi.h,
 *  where built with MPI); a caller may give its own. The callbacks
 *  run on the thread that called remat_session_step. The struct must outlive the session. */
typedef struct remat_communicator {
  /** sizeof(remat_communicator): callbacks may be appended, an older caller's smaller struct
   *  keeping the defaults of those it lacks (the struct_size rules above). */
  size_t struct_size;
  int32_t rank; /**< This process's rank, in [0, size). */
  int32_t size; /**< Number of ranks, at least 1. */
  void* user;   /**< Passed to the callbacks. */
  /** Starts summing each of the |count| arrays of |parts| (at most 8) over the ranks, in place;
   *  may return before the sums are done. |bucket| names the call for its wait: buckets are
   *  numbered from 0 in the order a step starts them, and a bucket is started once per step.
   *  Returns REMAT_OK, or a status that stops the step (REMAT_ERROR_CALLBACK to the caller). */
  remat_status (*allreduce_start)(void* user, uint32_t bucket, const remat_buffer* parts,
                                  uint32_t count);
  /** Returns once bucket |bucket|'s sums are in its arrays (REMAT_OK), or a failure, such as a
   *  rank that did not take part within the communicator's timeout. After a failure the sum
   *  may still write the arrays (should the missing rank come back): the caller ends or
   *  cancels its communicator's sums before it destroys the session (`remat train`'s ends the
   *  job). */
  remat_status (*allreduce_wait)(void* user, uint32_t bucket);
  /** Where the arrays the callbacks take are, a remat_memory: REMAT_MEMORY_HOST (0, default) or
   *  REMAT_MEMORY_CUDA. With device memory the session calls allreduce_start once the device has
   *  written the arrays (the backend's stream synchronised) and reads them only after
   *  allreduce_wait returns. Appended after |allreduce_wait| with |device| (an older caller's
   *  smaller struct means host memory). */
  int32_t memory;
  /** For REMAT_MEMORY_CUDA: the CUDA device (cudaSetDevice's number) whose memory the arrays are
   *  in; the session's backend must be that device's ("cuda:N"; "cuda" is device 0). Ignored for
   *  host memory. */
  int32_t device;
} remat_communicator;

/** Options of remat_session_create(). Initialise with remat_session_options_init(). */
typedef struct remat_session_options {
  /** sizeof(remat_session_options), set by remat_session_options_init(). */
  size_t struct_size;
  /** Backend and device: "cpu", "opencl", "opencl:PLATFORM:DEVICE", "cuda". Default "cpu". */
  const char* backend;
  /** Caller's arena (CPU backend), at least remat_plan_memory_info.arena_bytes, aligned to
   *  .alignment, used as it is. NULL: the session allocates it once at creation through the
   *  port and zeroes it (so for the persistent and host regions below). */
  void* arena;
  /** Size of |arena| in bytes. */
  size_t arena_size;
  /** Caller's persistent region; NULL: allocated once at creation through the port. */
  void* persistent;
  /** Size of |persistent| in bytes. */
  size_t persistent_size;
  /** Caller's host spill region; NULL: allocated once at creation when the plan needs one. */
  void* host;
  /** Size of |host| in bytes. */
  size_t host_size;
  /** Nonzero (default): initialise parameters and optimizer state as the plan says. Zero: leave
   *  the persistent region as it is, for the caller to write parameters with
   *  remat_session_write_param(): zeros in a region the session allocates, the caller's bytes
   *  in the caller's |persistent| region (optimizer state included). */
  int init_params;
  /** CPU backend: threads its kernels run on, the caller's included (at most 1024). 0
   *  (default): one per hardware thread the process may use; 1: the caller's thread only.
   *  The session starts them at creation and they wait between steps. Results are the same
   *  bits for every value. Other backends ignore it. Appended after REMAT_API_VERSION 1's
   *  first fields (so a size_t: it starts after their padding), an older caller's smaller
   *  struct gets the default. */
  size_t threads;
  /** The communicator of a data-parallel plan (one with allreduce ops), required by one and
   *  refused with any other plan when its size is over 1 (the gradients would not be
   *  averaged). NULL (default): none. Appended after |threads|. */
  const remat_communicator* communicator;
} remat_session_options;

/** A short, constant description of |status|, e.g. "plan corrupt". Never NULL. */
REMAT_API const char* remat_status_string(remat_status status);

/* ---- The library ---------------------------------------------------------------------------- */

/** Writes the loaded library's version to |out_info|, whose |struct_size| the caller sets
 *  first. A program checks it at start-up against the REMAT_API_VERSION it was built with.
 *  REMAT_ERROR_INVALID_ARGUMENT when |out_info| is NULL or its |struct_size| is not one this
 *  library accepts (nothing is written then). */
REMAT_API remat_status remat_version(remat_version_info* out_info);

/** Number of backends compiled into this library; at least 1 ("cpu" is always index 0). The
 *  list is fixed for the life of the process. */
REMAT_API uint32_t remat_backend_count(void);

/** Writes the name of backend |index| ("cpu", "opencl", ...) to |out_name|: a constant string
 *  that lives as long as the library is loaded, usable as remat_session_options.backend.
 *  REMAT_ERROR_NOT_FOUND when |index| is remat_backend_count() or more (then *|out_name| is
 *  NULL); REMAT_ERROR_INVALID_ARGUMENT when |out_name| is NULL. */
REMAT_API remat_status remat_backend_name(uint32_t index, const char** out_name);

/** Lists the devices backend |index| reaches on this machine: writes their number (0 when it
 *  reaches none) to |out_device_count| when it is not NULL, and text into the caller's
 *  |out_text| of |text_capacity| bytes: one line per device, "NAME:DEVICE  description" where
 *  "NAME:DEVICE" is a remat_session_options.backend value, or, when there is none, one line
 *  "(NAME: unavailable: why)". The text is NUL-terminated and cut to |text_capacity|; 4096
 *  bytes hold a typical list. Asks the device drivers each time (it may take a fraction of a
 *  second) and allocates nothing. REMAT_ERROR_NOT_FOUND when |index| is remat_backend_count()
 *  or more; REMAT_ERROR_INVALID_ARGUMENT when |out_text| is NULL or |text_capacity| is 0. On
 *  failure *|out_device_count| is 0 and |out_text|, when it has room, is "". */
REMAT_API remat_status remat_backend_devices(uint32_t index, uint32_t* out_device_count,
                                             char* out_text, size_t text_capacity);

/* ---- Plans ---------------------------------------------------------------------------------- */

/** Verifies |size| bytes at |bytes| as a plan and opens it. The bytes are not copied: they must
 *  outlive the plan and its sessions, and start at an 8-byte boundary (else
 *  REMAT_ERROR_MISALIGNED). On failure *|out_plan| is NULL and, when |out_message| is not NULL,
 *  a message naming the field, op or value (at most |message_capacity| bytes with its
 *  terminator) is written there. */
REMAT_API remat_status remat_plan_open(const void* bytes, size_t size, remat_plan** out_plan,
                                       char* out_message, size_t message_capacity);

/** Releases a plan opened by remat_plan_open(). NULL is allowed. Sessions made from it must be
 *  destroyed first. */
REMAT_API void remat_plan_close(remat_plan* plan);

/** Writes the region sizes |plan| needs to |out_info|. */
REMAT_API remat_status remat_plan_memory(const remat_plan* plan, remat_plan_memory_info* out_info);

/** Writes the number of bindings of |kind| in |plan| to |out_count|. */
REMAT_API remat_status remat_plan_binding_count(const remat_plan* plan, remat_binding_kind kind,
                                                uint32_t* out_count);

/** Describes binding |index| of |kind| in |plan|. Its name lives as long as the plan bytes. */
REMAT_API remat_status remat_plan_binding(const remat_plan* plan, remat_binding_kind kind,
                                          uint32_t index, remat_tensor_info* out_info);

/* The plan queries below return REMAT_ERROR_INVALID_ARGUMENT, writing nothing, when |plan| or
 * their out-parameter is NULL. */

/** Writes |plan|'s format version (REMAT_PLAN_FORMAT_OLDEST_VERSION..REMAT_PLAN_FORMAT_VERSION)
 *  to |out_version|. */
REMAT_API remat_status remat_plan_format_version(const remat_plan* plan, uint32_t* out_version);

/** Writes 1 to |out_has| when |plan| carries an eval program (what remat_session_eval() runs),
 *  0 when it has none (compiled with --eval-program off, or format version 1). */
REMAT_API remat_status remat_plan_has_eval_program(const remat_plan* plan, int* out_has);

/** Writes 1 to |out_has| when |plan|'s step checks its loss and gradients for NaN and infinity
 *  (so remat_session_step() can return REMAT_ERROR_NONFINITE and skip updates), 0 when it was
 *  compiled without finite checks (--finite-checks off) and applies every update as it is. */
REMAT_API remat_status remat_plan_has_finite_checks(const remat_plan* plan, int* out_has);

/** Writes the precision |plan| asks of its matrix products to |out_precision|
 *  (REMAT_MATMUL_PRECISION_FP32 for a plan compiled without --matmul-precision). */
REMAT_API remat_status remat_plan_matmul_precision(const remat_plan* plan,
                                                   remat_matmul_precision* out_precision);

/** Writes |plan|'s random seed (dropout's, and the parameter initialisers') to |out_seed|. */
REMAT_API remat_status remat_plan_seed(const remat_plan* plan, uint64_t* out_seed);

/** Writes the model |plan| was compiled from ("mlp:layers=2,width=8", an ONNX file's name) to
 *  |out_model|: a string that lives as long as the plan bytes. REMAT_ERROR_NOT_FOUND, with
 *  *|out_model| NULL, when the plan does not name one. */
REMAT_API remat_status remat_plan_model(const remat_plan* plan, const char** out_model);

/** Writes the checkpoint strategy |plan| was compiled with ("sqrt", "budget", ...) to
 *  |out_strategy|, as remat_plan_model() does the model; REMAT_ERROR_NOT_FOUND, with
 *  *|out_strategy| NULL, when the plan does not name one. */
REMAT_API remat_status remat_plan_strategy(const remat_plan* plan, const char** out_strategy);

/** Writes the batch size |plan| was compiled for (samples per step) to |out_batch|.
 *  REMAT_ERROR_NOT_FOUND, with *|out_batch| 0, when the plan does not record how it was
 *  compiled (a plan written by hand, without provenance). */
REMAT_API remat_status remat_plan_batch(const remat_plan* plan, uint32_t* out_batch);

/* ---- Sessions ------------------------------------------------------------------------------- */

/** Fills the |struct_size| bytes at |options| with defaults (CPU backend, regions allocated by
 *  the session, params initialised from the plan, one CPU thread per hardware thread) and sets its
 * struct_size to |struct_size|: only the fields a struct of that size holds are written, so a
 * caller built with an older, smaller remat_session_options is never written past its end. C and
 * C++ callers use remat_session_options_init(), which passes their own sizeof; other languages pass
 * theirs. REMAT_ERROR_INVALID_ARGUMENT, writing nothing, when |options| is NULL or |struct_size|
 * breaks the struct_size rules at the top. */
REMAT_API remat_status remat_session_options_init_sized(remat_session_options* options,
                                                        size_t struct_size);

/** Fills |options| with defaults, sized as the caller's header declares the struct. */
#define remat_session_options_init(options) \
  remat_session_options_init_sized((options), sizeof(*(options)))

/** Creates a session that runs |plan| with |options| (NULL: defaults). Every allocation the
 *  session will ever make happens here. |options|' struct_size follows the rules at the top.
 *  A caller region smaller than the plan needs is REMAT_ERROR_ARENA_TOO_SMALL; one not aligned
 *  to remat_plan_memory_info.alignment is REMAT_ERROR_MISALIGNED. On failure *|out_session| is
 *  NULL and a message is written to |out_message| as for remat_plan_open(). */
REMAT_API remat_status remat_session_create(const remat_plan* plan,
                                            const remat_session_options* options,
                                            remat_session** out_session, char* out_message,
                                            size_t message_capacity);

/** Destroys |session| and what it allocated. NULL is allowed. */
REMAT_API void remat_session_destroy(remat_session* session);

/** Copies |bytes| bytes from |data| into the input or label binding called |name|. |bytes| must
 *  equal the binding's size. Every input and label must be set before the first step; a value
 *  stays until it is set again. */
REMAT_API remat_status remat_session_set_input(remat_session* session, const char* name,
                                               const void* data, size_t bytes);

/** Runs one training step (forward, backward, optimizer update). Writes the step's loss, as
 *  computed before the update, to |out_loss| when it is not NULL.
 *
 *  When the plan's finite checks (compiled in by default) find a NaN or an infinity in the
 *  loss or a gradient, the step returns REMAT_ERROR_NONFINITE and skips every update after
 *  that check, so no non-finite value is written to parameters or optimizer state. With a
 *  non-finite loss, or a plan compiled with atomic checks, they keep their bytes; otherwise the
 *  updates of the gradients the backward pass finished first (all finite) stay applied, and
 *  the message ("step K: tensor 'NAME' is not finite: ...", K the step count after this step)
 *  says how many (docs/nonfinite.md). The loss is still written to |out_loss| and
 *  the step count still advances, because it is the index of the batch (dropout, a
 *  learning-rate schedule and a caller's data are functions of it): a run that skips steps is
 *  replayed exactly from a saved state. Adam's bias correction counts skipped steps too (torch's
 *  GradScaler, which does not call the optimizer, would not). The message names the first
 *  non-finite tensor in plan order (the loss, then gradients as the backward pass finishes
 *  them), the element and its value. */
REMAT_API remat_status remat_session_step(remat_session* session, float* out_loss);

/** Copies |bytes| bytes from |data| into the parameter or buffer (REMAT_BINDING_BUFFER) called
 *  |name|. */
REMAT_API remat_status remat_session_write_param(remat_session* session, const char* name,
                                                 const void* data, size_t bytes);

/** Copies the parameter or buffer called |name| (|bytes| must equal its size) into |out_data|. */
REMAT_API remat_status remat_session_read_param(remat_session* session, const char* name,
                                                void* out_data, size_t bytes);

/** Runs the plan's eval program (docs/eval.md): the forward pass on the inputs and labels last
 *  set, with the parameters as they are, without dropout, gradients or updates. Writes its loss
 *  to |out_loss| when it is not NULL. Changes no parameter, optimizer state or step count, so
 *  it may run between any two steps; it uses the arena, whose bytes no step keeps. Afterwards
 *  remat_session_read_output() reads the outputs, until the next step. With the same
 *  parameters and inputs, and neither dropout nor batch norm in the model (batch norms evaluate
 *  with their running statistics, as in torch's eval mode), the loss equals the loss the next
 *  step reports, bit for bit. REMAT_ERROR_NOT_FOUND when the plan has no eval program (compiled
 *  with --eval-program off, or format version 1); REMAT_ERROR_FAILED_PRECONDITION as for a
 *  step when an input or label was never set or a load_state failed part way; labels or ids out
 *  of range as for a step. */
REMAT_API remat_status remat_session_eval(remat_session* session, float* out_loss);

/** Copies output |name| (a REMAT_BINDING_OUTPUT binding of the plan; |bytes| must equal its
 *  size) of the last remat_session_eval() into |out_data|. REMAT_ERROR_NOT_FOUND for a name no
 *  output has; REMAT_ERROR_INVALID_ARGUMENT for another size; then
 *  REMAT_ERROR_FAILED_PRECONDITION when no eval has succeeded since the session was created or
 *  since the last step (which reuses the outputs' bytes). */
REMAT_API remat_status remat_session_read_output(remat_session* session, const char* name,
                                                 void* out_data, size_t bytes);

/** Sets the learning rate of every optimizer update of |session|'s plan to |lr| from the next
 *  step on (the plan's own value until then; AdamW's decoupled weight decay scales with it, as
 *  in torch). A schedule calls it before each step. The learning rate is not part of a training
 *  state: a schedule is a function of the step count, so set it again after a load.
 *  REMAT_ERROR_INVALID_ARGUMENT when |lr| is negative or not finite; REMAT_ERROR_NOT_FOUND when
 *  the plan has no optimizer update. */
REMAT_API remat_status remat_session_set_learning_rate(remat_session* session, float lr);

/** Writes the learning rate the next step uses to |out_lr| (the plan's until set).
 *  REMAT_ERROR_NOT_FOUND when the plan has no optimizer update. */
REMAT_API remat_status remat_session_learning_rate(const remat_session* session, float* out_lr);

/** Writes the dynamic loss scale the next step uses to |out_scale| (docs/precision.md): the
 *  gradients of the loss are multiplied by it and each parameter's gradient divided by it again
 *  before its update. The session doubles it after the plan's growth interval of steps with
 *  finite gradients and halves it when a step's gradients overflow (that step returns
 *  REMAT_ERROR_NONFINITE, its message ending "; loss scale A -> B"); a training state carries
 *  it. REMAT_ERROR_NOT_FOUND when the plan has no loss scaling (fp16 plans have it by default,
 *  `remat compile --loss-scale`). */
REMAT_API remat_status remat_session_loss_scale(const remat_session* session, float* out_scale);

/** Number of steps this session has run; also the step index dropout and Adam use next. */
REMAT_API uint64_t remat_session_step_count(const remat_session* session);

/** The message of the last failed call on |session| ("" when none failed). Never NULL. */
REMAT_API const char* remat_session_last_error(const remat_session* session);

/* ---- Training state: save and resume -------------------------------------------------------
 * A state is everything a session needs to continue training exactly: every parameter and
 * optimizer-state tensor of the plan, the step count, the plan's fingerprint (CRC32C and size
 * of the plan bytes) and format versions, closed by a CRC32C of all the bytes before it. Loading
 * it into a fresh session of the same plan, on any backend, and stepping on gives the bytes that
 * uninterrupted training would have given. The library streams a state through the caller's
 * callbacks in small chunks: it opens no file and allocates nothing. Layout (docs/state.md):
 * a 48-byte header, the tensors' bytes in plan order, a 4-byte checksum. */

/** Receives the next |bytes| bytes of a state being saved (|data| is valid only during the
 *  call). Returns 0 on success; anything else stops the save with REMAT_ERROR_CALLBACK. */
typedef int (*remat_state_write_fn)(void* context, const void* data, size_t bytes);

/** Fills |data| with the |bytes| bytes of a state at byte |offset|. A load reads the state
 *  twice (it is checked whole before the session is touched), so the reader must be able to
 *  read any range again. Returns 0 on success; anything else stops the load with
 *  REMAT_ERROR_CALLBACK. */
typedef int (*remat_state_read_fn)(void* context, uint64_t offset, void* data, size_t bytes);

/** Writes the size in bytes of |session|'s states (fixed for a plan) to |out_bytes|. */
REMAT_API remat_status remat_session_state_size(const remat_session* session, uint64_t* out_bytes);

/** Streams |session|'s state to |write| (called with |context| and consecutive chunks, in
 *  order, state_size bytes in all). Call it between steps. REMAT_ERROR_CALLBACK when |write|
 *  fails (what was written is then incomplete: write to a temporary and rename it only after
 *  success), a backend's error when a tensor cannot be read back. */
REMAT_API remat_status remat_session_save_state(remat_session* session, remat_state_write_fn write,
                                                void* context);

/** Loads the state of |size| bytes that |read| gives into |session|: parameters, optimizer
 *  state and step count. The whole state is checked first (size, header, plan fingerprint,
 *  checksum); a state of another plan or format is REMAT_ERROR_STATE_MISMATCH, a corrupt or
 *  truncated one REMAT_ERROR_DATA_LOSS, a failing reader REMAT_ERROR_CALLBACK, and in all
 *  these cases the session is left exactly as it was. Only if the reader fails or returns
 *  other bytes while the checked state is being copied in (a second pass) is the session left
 *  partly loaded; it then refuses to step (REMAT_ERROR_FAILED_PRECONDITION) until a load
 *  succeeds. */
REMAT_API remat_status remat_session_load_state(remat_session* session, remat_state_read_fn read,
                                                void* context, uint64_t size);

#ifdef __cplusplus
}
#endif

#endif /* REMAT_REMAT_H_ */
