//! Safe bindings of remat's C API (remat.h): open a compiled plan, create a training session,
//! set inputs, step, read and write parameters, save and load training states. Handles are
//! freed exactly once, when the owning value is dropped; every failure is an [`Error`] with the
//! library's status and message.
//!
//! ```no_run
//! let plan = remat::Plan::open(&std::fs::read("mlp.rplan").unwrap()).unwrap();
//! let mut session = remat::Session::new(&plan, "cpu").unwrap();
//! session.set_input("x", &vec![0.5f32; 16 * 32]).unwrap();
//! session.set_input("labels", &vec![1i32; 16]).unwrap();
//! let loss = session.step().unwrap();
//! ```
pub mod sys;

#[cfg(feature = "mpi")]
pub mod mpi;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_void};
use std::ptr;

/// A failed call: the `remat_status` value and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = unsafe { CStr::from_ptr(sys::remat_status_string(self.status)) };
        write!(f, "{}: {}", name.to_string_lossy(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn check(status: sys::remat_status, message: impl FnOnce() -> String) -> Result<()> {
    if status == sys::REMAT_OK {
        Ok(())
    } else {
        Err(Error { status, message: message() })
    }
}

fn c_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error { status: 1, message: format!("name {:?} holds a NUL byte", name) })
}

/// The loaded library's release and C API version; refuses a library of another API version.
pub fn version() -> Result<sys::remat_version_info> {
    let mut info = sys::remat_version_info { struct_size: std::mem::size_of::<sys::remat_version_info>(), ..Default::default() };
    check(unsafe { sys::remat_version(&mut info) }, || "remat_version failed".into())?;
    if info.api_version != 1 {
        return Err(Error { status: 3, message: format!("the library has C API version {}, these bindings 1", info.api_version) });
    }
    Ok(info)
}

/// A plan's named tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    /// remat_dtype: 0 f32, 3 i32, 4 i64.
    pub dtype: i32,
    pub shape: Vec<i64>,
    pub bytes: u64,
}

/// Which bindings of a plan (remat_binding_kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    Input = sys::REMAT_BINDING_INPUT as isize,
    Label = sys::REMAT_BINDING_LABEL as isize,
    Param = sys::REMAT_BINDING_PARAM as isize,
    Output = sys::REMAT_BINDING_OUTPUT as isize,
    Buffer = sys::REMAT_BINDING_BUFFER as isize,
}

/// A compiled plan, verified by the library. It owns an 8-byte aligned copy of the bytes, which
/// the library reads in place, and its bindings, read once (a plan never changes).
pub struct Plan {
    handle: *mut sys::remat_plan,
    _storage: Vec<u64>,
    bindings: Vec<Vec<Binding>>,
}

const KINDS: [BindingKind; 5] =
    [BindingKind::Input, BindingKind::Label, BindingKind::Param, BindingKind::Output, BindingKind::Buffer];

impl Plan {
    /// Opens the plan in |bytes| (a `.rplan` file's contents).
    pub fn open(bytes: &[u8]) -> Result<Plan> {
        let mut storage = vec![0u64; (bytes.len() + 7) / 8];
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), storage.as_mut_ptr() as *mut u8, bytes.len()) };
        let mut handle = ptr::null_mut();
        let mut message = [0 as c_char; 512];
        let status = unsafe {
            sys::remat_plan_open(storage.as_ptr() as *const c_void, bytes.len(), &mut handle, message.as_mut_ptr(),
                                 message.len())
        };
        check(status, || unsafe { CStr::from_ptr(message.as_ptr()) }.to_string_lossy().into_owned())?;
        let bindings = KINDS.iter().map(|k| read_bindings(handle, *k)).collect();
        Ok(Plan { handle, _storage: storage, bindings })
    }

    /// Bytes of each region a session needs, and their alignment.
    pub fn memory(&self) -> sys::remat_plan_memory_info {
        let mut info = sys::remat_plan_memory_info::default();
        unsafe { sys::remat_plan_memory(self.handle, &mut info) };
        info
    }

    /// The bindings of |kind|, in plan order.
    pub fn bindings(&self, kind: BindingKind) -> &[Binding] {
        &self.bindings[kind as usize]
    }
}

/// Reads the bindings of |kind| of the open plan |handle| from the library.
fn read_bindings(handle: *mut sys::remat_plan, kind: BindingKind) -> Vec<Binding> {
    let mut count = 0u32;
    unsafe { sys::remat_plan_binding_count(handle, kind as i32, &mut count) };
    (0..count)
        .filter_map(|i| {
            let mut info = std::mem::MaybeUninit::<sys::remat_tensor_info>::zeroed();
            let status = unsafe { sys::remat_plan_binding(handle, kind as i32, i, info.as_mut_ptr()) };
            if status != sys::REMAT_OK {
                return None;
            }
            let info = unsafe { info.assume_init() };
            Some(Binding {
                name: unsafe { CStr::from_ptr(info.name) }.to_string_lossy().into_owned(),
                dtype: info.dtype,
                shape: info.dims[..info.rank as usize].to_vec(),
                bytes: info.bytes,
            })
        })
        .collect()
}

impl Drop for Plan {
    fn drop(&mut self) {
        unsafe { sys::remat_plan_close(self.handle) };
    }
}

/// Plain values a binding holds: f32 or i32 (remat_dtype 0 and 3) and i64 (4).
pub trait Element: Copy {
    const DTYPE: i32;
}
impl Element for f32 {
    const DTYPE: i32 = 0;
}
impl Element for i32 {
    const DTYPE: i32 = 3;
}
impl Element for i64 {
    const DTYPE: i32 = 4;
}

/// One float32 array of a bucket that a [`Communicator`] sums over the ranks, in place: host
/// memory (the session's arena on the CPU backend, a host copy of it on the GPU backends) that
/// stays valid from the bucket's `allreduce_start` until its `allreduce_wait` returns.
#[repr(transparent)]
pub struct Buffer(sys::remat_buffer);

impl Buffer {
    /// Its number of floats.
    pub fn len(&self) -> usize {
        self.0.count as usize
    }

    /// Whether it holds no float.
    pub fn is_empty(&self) -> bool {
        self.0.count == 0
    }

    /// Its first float, for a sum that goes on after `allreduce_start` returns (another thread,
    /// an MPI request): valid until the bucket's `allreduce_wait` returns.
    pub fn as_mut_ptr(&self) -> *mut f32 {
        self.0.data
    }

    /// Its floats, for a sum done within the call that receives the buffer.
    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        if self.0.count == 0 {
            return &mut [];
        }
        unsafe { std::slice::from_raw_parts_mut(self.0.data, self.0.count as usize) }
    }
}

/// The most arrays a bucket holds (the catalogue's inputs of allreduce_start).
const MAX_PARTS: usize = 8;

/// How a session of a data-parallel plan (`remat compile --data-parallel`) sums its gradients
/// with the other ranks' sessions (remat_communicator in remat.h, docs/data-parallel.md). The
/// session calls `allreduce_start` on each bucket of gradients as the backward pass finishes it
/// and `allreduce_wait` before the optimizer reads it, then divides the sums by `size()`; every
/// rank makes the same calls in the same order, and a step that stops early still waits for
/// every bucket it started. The calls run on the thread that called [`Session::step`]. Nothing
/// may write a bucket's buffers once its `allreduce_wait` has returned (`Ok` or `Err`); a session
/// drops its communicator before it frees its memory, so a communicator's `Drop` may cancel sums
/// still in flight.
pub trait Communicator {
    /// This rank, in `[0, size())`.
    fn rank(&self) -> i32;
    /// The number of ranks, at least 1.
    fn size(&self) -> i32;
    /// Starts summing each of |parts| (at most 8) over the ranks, in place; may return before
    /// the sums are done. Buckets are numbered from 0 in the order a step starts them. An error
    /// stops the step (REMAT_ERROR_CALLBACK, naming the bucket) and must mean that nothing of
    /// this bucket was started: the session does not wait for it.
    fn allreduce_start(&mut self, bucket: u32, parts: &mut [Buffer]) -> Result<()>;
    /// Returns once bucket |bucket|'s sums are in its buffers, or an error (a rank that did not
    /// take part in time), which stops the step.
    fn allreduce_wait(&mut self, bucket: u32) -> Result<()>;
}

/// The C side of a session's communicator: the struct the library calls, and the Rust object
/// its callbacks reach through `user`. Allocated once and reached only through its raw pointer
/// (LinkOwner), so that nothing moves or reborrows it while the library holds `&raw`.
struct CommunicatorLink<'p> {
    raw: sys::remat_communicator,
    rust: Box<dyn Communicator + 'p>,
}

/// Owns a CommunicatorLink made with Box::into_raw; frees it when dropped.
struct LinkOwner<'p>(ptr::NonNull<CommunicatorLink<'p>>);

impl Drop for LinkOwner<'_> {
    fn drop(&mut self) {
        unsafe { drop(Box::from_raw(self.0.as_ptr())) };
    }
}

/// A callback's status: REMAT_OK, the error's own, or REMAT_ERROR_CALLBACK for an error without
/// one or a panic (which must not unwind into the library: its payload is not even dropped
/// here, as a payload's own Drop could panic).
fn callback_status(result: std::thread::Result<Result<()>>) -> sys::remat_status {
    const CALLBACK: sys::remat_status = 21;
    match result {
        Ok(Ok(())) => sys::REMAT_OK,
        Ok(Err(e)) if e.status != sys::REMAT_OK => e.status,
        Ok(Err(_)) => CALLBACK,
        Err(payload) => {
            std::mem::forget(payload);
            CALLBACK
        }
    }
}

/// The Rust object behind a callback's |user|, borrowed alone (the library reads `raw`).
unsafe fn communicator_of<'a>(user: *mut c_void) -> &'a mut (dyn Communicator + 'a) {
    let link = user as *mut CommunicatorLink;
    &mut **ptr::addr_of_mut!((*link).rust)
}

extern "C" fn allreduce_start_trampoline(user: *mut c_void, bucket: u32, parts: *const sys::remat_buffer,
                                         count: u32) -> sys::remat_status {
    let count = count as usize;
    if count > MAX_PARTS || (count > 0 && parts.is_null()) {
        return 1; // REMAT_ERROR_INVALID_ARGUMENT: the library never calls so
    }
    // A copy of the library's (const) array, which Buffer wraps transparently.
    let mut local = [sys::remat_buffer { data: ptr::null_mut(), count: 0 }; MAX_PARTS];
    if count > 0 {
        local[..count].copy_from_slice(unsafe { std::slice::from_raw_parts(parts, count) });
    }
    let buffers = unsafe { std::slice::from_raw_parts_mut(local.as_mut_ptr() as *mut Buffer, count) };
    let rust = unsafe { communicator_of(user) };
    callback_status(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rust.allreduce_start(bucket, buffers))))
}

extern "C" fn allreduce_wait_trampoline(user: *mut c_void, bucket: u32) -> sys::remat_status {
    let rust = unsafe { communicator_of(user) };
    callback_status(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rust.allreduce_wait(bucket))))
}

/// A training session of a plan; borrows the plan, which must outlive it.
pub struct Session<'p> {
    handle: *mut sys::remat_session,
    plan: &'p Plan,
    // Dropped before the session is destroyed (Drop), which calls no communicator.
    communicator: Option<LinkOwner<'p>>,
}

impl<'p> Session<'p> {
    /// A session on |backend| ("cpu", "opencl", "cuda", or "NAME:DEVICE"), the library
    /// allocating its regions.
    pub fn new(plan: &'p Plan, backend: &str) -> Result<Session<'p>> {
        Session::create(plan, backend, ptr::null(), None)
    }

    /// A session of a data-parallel plan on |backend|, summing its gradients through
    /// |communicator|, which it owns until it is dropped. The library refuses a data-parallel
    /// plan without a communicator, and a communicator of more than one rank with any other plan.
    pub fn with_communicator(plan: &'p Plan, backend: &str, communicator: Box<dyn Communicator + 'p>)
                             -> Result<Session<'p>> {
        let link = Box::into_raw(Box::new(CommunicatorLink {
            raw: sys::remat_communicator {
                struct_size: std::mem::size_of::<sys::remat_communicator>(),
                rank: communicator.rank(),
                size: communicator.size(),
                user: ptr::null_mut(),
                allreduce_start: Some(allreduce_start_trampoline),
                allreduce_wait: Some(allreduce_wait_trampoline),
                memory: 0, // REMAT_MEMORY_HOST: the trait takes slices of host memory
                device: 0,
            },
            rust: communicator,
        }));
        unsafe { (*link).raw.user = link as *mut c_void };
        let owner = LinkOwner(ptr::NonNull::new(link).expect("Box::into_raw is never null"));
        let raw = unsafe { ptr::addr_of!((*link).raw) };
        Session::create(plan, backend, raw, Some(owner))
    }

    /// A session of a data-parallel plan on |backend| whose gradients MPI sums over |world|'s
    /// ranks (feature `mpi`); the session borrows the World, which it must not outlive.
    #[cfg(feature = "mpi")]
    pub fn with_world(plan: &'p Plan, backend: &str, world: &'p mpi::World) -> Result<Session<'p>> {
        Session::create(plan, backend, world.communicator(), None)
    }

    /// A session whose options name the communicator |raw| (null: none), which |link| (when
    /// given) holds and the session keeps.
    fn create(plan: &'p Plan, backend: &str, raw: *const sys::remat_communicator, link: Option<LinkOwner<'p>>)
              -> Result<Session<'p>> {
        let backend = c_name(backend)?;
        let mut options = std::mem::MaybeUninit::<sys::remat_session_options>::zeroed();
        let size = std::mem::size_of::<sys::remat_session_options>();
        check(unsafe { sys::remat_session_options_init_sized(options.as_mut_ptr(), size) }, || "options".into())?;
        let mut options = unsafe { options.assume_init() };
        options.backend = backend.as_ptr();
        options.communicator = raw;
        let mut handle = ptr::null_mut();
        let mut message = [0 as c_char; 512];
        let status = unsafe {
            sys::remat_session_create(plan.handle, &options, &mut handle, message.as_mut_ptr(), message.len())
        };
        check(status, || unsafe { CStr::from_ptr(message.as_ptr()) }.to_string_lossy().into_owned())?;
        Ok(Session { handle, plan, communicator: link })
    }

    fn check(&self, status: sys::remat_status) -> Result<()> {
        check(status, || unsafe { CStr::from_ptr(sys::remat_session_last_error(self.handle)) }.to_string_lossy().into_owned())
    }

    fn binding(&self, name: &str, kinds: &[BindingKind]) -> Result<&'p Binding> {
        let plan: &'p Plan = self.plan;
        kinds
            .iter()
            .flat_map(|k| plan.bindings(*k).iter())
            .find(|b| b.name == name)
            .ok_or_else(|| Error { status: 11, message: format!("no binding {:?} here", name) })
    }

    fn typed<T: Element>(&self, name: &str, kinds: &[BindingKind], len: usize) -> Result<()> {
        let b = self.binding(name, kinds)?;
        if b.dtype != T::DTYPE || (len * std::mem::size_of::<T>()) as u64 != b.bytes {
            return Err(Error {
                status: 1,
                message: format!("{:?} is dtype {} of {} bytes; given dtype {} of {} bytes", name, b.dtype, b.bytes,
                                 T::DTYPE, len * std::mem::size_of::<T>()),
            });
        }
        Ok(())
    }

    /// Sets input or label |name| (its dtype and element count are checked).
    pub fn set_input<T: Element>(&mut self, name: &str, data: &[T]) -> Result<()> {
        self.typed::<T>(name, &[BindingKind::Input, BindingKind::Label], data.len())?;
        let c = c_name(name)?;
        self.check(unsafe {
            sys::remat_session_set_input(self.handle, c.as_ptr(), data.as_ptr() as *const c_void,
                                         std::mem::size_of_val(data))
        })
    }

    /// One training step; its loss.
    pub fn step(&mut self) -> Result<f32> {
        let mut loss = 0.0f32;
        self.check(unsafe { sys::remat_session_step(self.handle, &mut loss) })?;
        Ok(loss)
    }

    /// The eval program on the inputs set; its loss.
    pub fn eval(&mut self) -> Result<f32> {
        let mut loss = 0.0f32;
        self.check(unsafe { sys::remat_session_eval(self.handle, &mut loss) })?;
        Ok(loss)
    }

    /// Parameter or buffer |name|.
    pub fn read_param<T: Element + Default>(&mut self, name: &str) -> Result<Vec<T>> {
        let b = self.binding(name, &[BindingKind::Param, BindingKind::Buffer])?;
        let mut out = vec![T::default(); b.bytes as usize / std::mem::size_of::<T>()];
        self.typed::<T>(name, &[BindingKind::Param, BindingKind::Buffer], out.len())?;
        let c = c_name(name)?;
        self.check(unsafe {
            sys::remat_session_read_param(self.handle, c.as_ptr(), out.as_mut_ptr() as *mut c_void, b.bytes as usize)
        })?;
        Ok(out)
    }

    /// Overwrites parameter or buffer |name|.
    pub fn write_param<T: Element>(&mut self, name: &str, data: &[T]) -> Result<()> {
        self.typed::<T>(name, &[BindingKind::Param, BindingKind::Buffer], data.len())?;
        let c = c_name(name)?;
        self.check(unsafe {
            sys::remat_session_write_param(self.handle, c.as_ptr(), data.as_ptr() as *const c_void,
                                           std::mem::size_of_val(data))
        })
    }

    /// Sets the optimizer's learning rate for the next steps.
    pub fn set_learning_rate(&mut self, lr: f32) -> Result<()> {
        self.check(unsafe { sys::remat_session_set_learning_rate(self.handle, lr) })
    }

    /// The dynamic loss scale the next step uses (docs/precision.md); status NOT_FOUND (11) for a
    /// plan without loss scaling (fp16 plans have it by default).
    pub fn loss_scale(&self) -> Result<f32> {
        let mut scale = 0.0f32;
        // The C call sets no message (it reads a const session): the binding words it.
        check(unsafe { sys::remat_session_loss_scale(self.handle, &mut scale) }, || {
            "the plan has no loss scaling (compile with --precision fp16 or --loss-scale dynamic)".to_string()
        })?;
        Ok(scale)
    }

    /// Steps taken (or loaded with a state).
    pub fn step_count(&self) -> u64 {
        unsafe { sys::remat_session_step_count(self.handle) }
    }

    /// The training state (parameters, optimizer state, step count) as bytes.
    pub fn save_state(&mut self) -> Result<Vec<u8>> {
        extern "C" fn write(context: *mut c_void, data: *const c_void, bytes: usize) -> i32 {
            let out = unsafe { &mut *(context as *mut Vec<u8>) };
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(data as *const u8, bytes) });
            0
        }
        let mut out: Vec<u8> = Vec::new();
        self.check(unsafe { sys::remat_session_save_state(self.handle, write, &mut out as *mut Vec<u8> as *mut c_void) })?;
        Ok(out)
    }

    /// Loads a state of this plan; the session is unchanged when it is refused.
    pub fn load_state(&mut self, state: &[u8]) -> Result<()> {
        extern "C" fn read(context: *mut c_void, offset: u64, data: *mut c_void, bytes: usize) -> i32 {
            let state = unsafe { &*(context as *const &[u8]) };
            let start = offset as usize;
            match state.get(start..start + bytes) {
                Some(part) => {
                    unsafe { ptr::copy_nonoverlapping(part.as_ptr(), data as *mut u8, bytes) };
                    0
                }
                None => 1,
            }
        }
        let context: &[u8] = state;
        self.check(unsafe {
            sys::remat_session_load_state(self.handle, read, &context as *const &[u8] as *mut c_void, state.len() as u64)
        })
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        // The communicator first: remat.h asks that its sums be ended or cancelled before the
        // session whose memory they write is destroyed.
        self.communicator = None;
        unsafe { sys::remat_session_destroy(self.handle) };
    }
}
