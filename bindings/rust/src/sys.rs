//! The C API of remat.h (REMAT_API_VERSION 1) as `extern "C"` declarations and `repr(C)`
//! structs. tests/layout.rs checks every struct's size and field offsets against the C
//! compiler's.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type remat_status = c_int;
pub const REMAT_OK: remat_status = 0;
pub const REMAT_MAX_RANK: usize = 6;

pub const REMAT_BINDING_INPUT: c_int = 0;
pub const REMAT_BINDING_LABEL: c_int = 1;
pub const REMAT_BINDING_PARAM: c_int = 2;
pub const REMAT_BINDING_OUTPUT: c_int = 3;
pub const REMAT_BINDING_BUFFER: c_int = 4;

/// Opaque handles.
#[repr(C)]
pub struct remat_plan {
    _private: [u8; 0],
}
#[repr(C)]
pub struct remat_session {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct remat_tensor_info {
    pub name: *const c_char,
    pub dtype: c_int,
    pub rank: u32,
    pub dims: [i64; REMAT_MAX_RANK],
    pub bytes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct remat_plan_memory_info {
    pub arena_bytes: u64,
    pub persistent_bytes: u64,
    pub host_bytes: u64,
    pub alignment: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct remat_version_info {
    pub struct_size: usize,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub api_version: u32,
    pub plan_format_min: u32,
    pub plan_format_max: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct remat_session_options {
    pub struct_size: usize,
    pub backend: *const c_char,
    pub arena: *mut c_void,
    pub arena_size: usize,
    pub persistent: *mut c_void,
    pub persistent_size: usize,
    pub host: *mut c_void,
    pub host_size: usize,
    pub init_params: c_int,
    pub threads: usize,
    /// The communicator of a data-parallel plan, or null (the crate's Session::with_communicator
    /// sets it).
    pub communicator: *const remat_communicator,
}

/// A float32 array in host memory that a communicator sums in place.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct remat_buffer {
    pub data: *mut f32,
    pub count: u64,
}

pub type remat_allreduce_start_fn =
    extern "C" fn(user: *mut c_void, bucket: u32, parts: *const remat_buffer, count: u32) -> remat_status;
pub type remat_allreduce_wait_fn = extern "C" fn(user: *mut c_void, bucket: u32) -> remat_status;

/// How a data-parallel session sums gradients with the other ranks (remat.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct remat_communicator {
    pub struct_size: usize,
    pub rank: i32,
    pub size: i32,
    pub user: *mut c_void,
    pub allreduce_start: Option<remat_allreduce_start_fn>,
    pub allreduce_wait: Option<remat_allreduce_wait_fn>,
    pub memory: i32,
    pub device: i32,
}

pub type remat_state_write_fn = extern "C" fn(context: *mut c_void, data: *const c_void, bytes: usize) -> c_int;
pub type remat_state_read_fn =
    extern "C" fn(context: *mut c_void, offset: u64, data: *mut c_void, bytes: usize) -> c_int;

extern "C" {
    pub fn remat_status_string(status: remat_status) -> *const c_char;
    pub fn remat_version(out_info: *mut remat_version_info) -> remat_status;
    pub fn remat_plan_open(bytes: *const c_void, size: usize, out_plan: *mut *mut remat_plan,
                           out_message: *mut c_char, message_capacity: usize) -> remat_status;
    pub fn remat_plan_close(plan: *mut remat_plan);
    pub fn remat_plan_memory(plan: *const remat_plan, out_info: *mut remat_plan_memory_info) -> remat_status;
    pub fn remat_plan_binding_count(plan: *const remat_plan, kind: c_int, out_count: *mut u32) -> remat_status;
    pub fn remat_plan_binding(plan: *const remat_plan, kind: c_int, index: u32,
                              out_info: *mut remat_tensor_info) -> remat_status;
    pub fn remat_session_options_init_sized(options: *mut remat_session_options, struct_size: usize) -> remat_status;
    pub fn remat_session_create(plan: *const remat_plan, options: *const remat_session_options,
                                out_session: *mut *mut remat_session, out_message: *mut c_char,
                                message_capacity: usize) -> remat_status;
    pub fn remat_session_destroy(session: *mut remat_session);
    pub fn remat_session_set_input(session: *mut remat_session, name: *const c_char, data: *const c_void,
                                   bytes: usize) -> remat_status;
    pub fn remat_session_step(session: *mut remat_session, out_loss: *mut f32) -> remat_status;
    pub fn remat_session_write_param(session: *mut remat_session, name: *const c_char, data: *const c_void,
                                     bytes: usize) -> remat_status;
    pub fn remat_session_read_param(session: *mut remat_session, name: *const c_char, out_data: *mut c_void,
                                    bytes: usize) -> remat_status;
    pub fn remat_session_eval(session: *mut remat_session, out_loss: *mut f32) -> remat_status;
    pub fn remat_session_set_learning_rate(session: *mut remat_session, lr: f32) -> remat_status;
    pub fn remat_session_loss_scale(session: *const remat_session, out_scale: *mut f32) -> remat_status;
    pub fn remat_session_step_count(session: *const remat_session) -> u64;
    pub fn remat_session_last_error(session: *const remat_session) -> *const c_char;
    pub fn remat_session_state_size(session: *const remat_session, out_bytes: *mut u64) -> remat_status;
    pub fn remat_session_save_state(session: *mut remat_session, write: remat_state_write_fn,
                                    context: *mut c_void) -> remat_status;
    pub fn remat_session_load_state(session: *mut remat_session, read: remat_state_read_fn, context: *mut c_void,
                                    size: u64) -> remat_status;
}

/// libremat_mpi's handle (remat/remat_mpi.h).
#[cfg(feature = "mpi")]
#[repr(C)]
pub struct remat_mpi {
    _private: [u8; 0],
}

#[cfg(feature = "mpi")]
extern "C" {
    pub fn remat_mpi_join(timeout_seconds: f64, out: *mut *mut remat_mpi, message: *mut c_char,
                          capacity: usize) -> remat_status;
    pub fn remat_mpi_join_nccl(timeout_seconds: f64, cuda_device: i32, out: *mut *mut remat_mpi,
                               message: *mut c_char, capacity: usize) -> remat_status;
    pub fn remat_mpi_communicator(mpi: *const remat_mpi) -> *const remat_communicator;
    pub fn remat_mpi_leave(mpi: *mut remat_mpi);
}
