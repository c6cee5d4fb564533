//! MPI's communicator for data-parallel training (feature `mpi`): libremat_mpi, the one
//! `remat train --data-parallel` uses (remat/remat_mpi.h, docs/data-parallel.md). Under
//! `mpirun -np N`, each rank joins, trains its share of every batch in a session made with
//! [`Session::with_world`](crate::Session::with_world), and leaves when the World is dropped:
//!
//! ```no_run
//! # fn main() -> remat::Result<()> {
//! let world = remat::mpi::World::join(30.0)?;
//! let plan = remat::Plan::open(&std::fs::read("dp.rplan").unwrap())?; // remat compile ... --data-parallel
//! let mut session = remat::Session::with_world(&plan, "cpu", &world)?;
//! // ... rows [rank x B, (rank + 1) x B) of each batch of world.size() x B rows, session.step() ...
//! # Ok(()) }
//! ```
use crate::{sys, Error, Result};
use std::ffi::CStr;
use std::os::raw::c_char;
use std::ptr;

/// This process's membership of MPI_COMM_WORLD. One per process, joined and dropped on the same
/// thread (it is not `Send`: MPI finalises on the thread that initialised it); MPI cannot be
/// joined again after it is dropped. Sessions that use it borrow it, so they are dropped first.
pub struct World {
    handle: *mut sys::remat_mpi,
}

impl World {
    /// Initialises MPI and starts the thread that sums the buckets; |timeout_seconds| (> 0, at
    /// most a day) is how long a wait for another rank's part of a sum waits before it ends the
    /// whole job (the rank prints why and exits with status 1). Errors: status 1 (invalid
    /// argument) for a timeout out of range, 15 (failed precondition) when MPI was initialised or
    /// finalised already in this process, 13 (unavailable) when MPI gives too little threading,
    /// 14 (resource exhausted) without memory or a thread for the sums.
    pub fn join(timeout_seconds: f64) -> Result<World> {
        Self::joined(|handle, message, capacity| unsafe {
            sys::remat_mpi_join(timeout_seconds, handle, message, capacity)
        })
    }

    /// As [`join`](World::join), then sums the buckets with NCCL in the memory of CUDA device
    /// |cuda_device| (-1: the rank's local rank, its rank among the ranks on its machine)
    /// instead of MPI's host copies; sessions then run on [`backend`](World::backend). Errors
    /// also: status 1 for a device below -1 or above 1023, 13 when a rank cannot open NCCL (no
    /// NCCL, no such device, a build without CUDA) or NCCL's start fails.
    pub fn join_nccl(timeout_seconds: f64, cuda_device: i32) -> Result<World> {
        Self::joined(|handle, message, capacity| unsafe {
            sys::remat_mpi_join_nccl(timeout_seconds, cuda_device, handle, message, capacity)
        })
    }

    fn joined(join: impl FnOnce(*mut *mut sys::remat_mpi, *mut c_char, usize) -> sys::remat_status)
              -> Result<World> {
        let mut handle = ptr::null_mut();
        let mut message = [0 as c_char; 512];
        let status = join(&mut handle, message.as_mut_ptr(), message.len());
        if status != sys::REMAT_OK {
            let message = unsafe { CStr::from_ptr(message.as_ptr()) }.to_string_lossy().into_owned();
            return Err(Error { status, message });
        }
        Ok(World { handle })
    }

    /// The backend its sessions must run on: `Some("cuda:D")` when NCCL sums in device D's
    /// memory ([`join_nccl`](World::join_nccl)), `None` (any backend) for MPI's sums.
    pub fn backend(&self) -> Option<String> {
        let c = unsafe { &*self.communicator() };
        // An older library's struct ends before |memory|: host memory.
        if c.struct_size >= std::mem::size_of::<sys::remat_communicator>() && c.memory == 1 {
            // REMAT_MEMORY_CUDA
            Some(format!("cuda:{}", c.device))
        } else {
            None
        }
    }

    /// The communicator's C struct, for a session's options.
    pub(crate) fn communicator(&self) -> *const sys::remat_communicator {
        unsafe { sys::remat_mpi_communicator(self.handle) }
    }

    /// This process's rank in MPI_COMM_WORLD.
    pub fn rank(&self) -> i32 {
        unsafe { (*self.communicator()).rank }
    }

    /// The number of ranks.
    pub fn size(&self) -> i32 {
        unsafe { (*self.communicator()).size }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        unsafe { sys::remat_mpi_leave(self.handle) };
    }
}
