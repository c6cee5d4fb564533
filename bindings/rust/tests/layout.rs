//! The `repr(C)` structs of src/sys.rs have the sizes and field offsets the C compiler gives
//! remat.h's (measured by build.rs), and the API version is the header's.
use remat::sys::*;
use std::mem::{size_of, MaybeUninit};
use std::ptr::addr_of;

// The C compiler's figures, named after the C types (hence the lint).
#[allow(non_upper_case_globals)]
mod c {
    include!(concat!(env!("OUT_DIR"), "/c_layout.rs"));
}
use c::*;

macro_rules! offset {
    ($t:ty, $f:ident) => {{
        let value = MaybeUninit::<$t>::uninit();
        let base = value.as_ptr();
        (unsafe { addr_of!((*base).$f) } as usize) - (base as usize)
    }};
}

#[test]
fn structs_match_the_c_compiler() {
    assert_eq!(size_of::<remat_tensor_info>(), SIZE_remat_tensor_info);
    assert_eq!(offset!(remat_tensor_info, name), OFFSET_remat_tensor_info_name);
    assert_eq!(offset!(remat_tensor_info, dtype), OFFSET_remat_tensor_info_dtype);
    assert_eq!(offset!(remat_tensor_info, rank), OFFSET_remat_tensor_info_rank);
    assert_eq!(offset!(remat_tensor_info, dims), OFFSET_remat_tensor_info_dims);
    assert_eq!(offset!(remat_tensor_info, bytes), OFFSET_remat_tensor_info_bytes);
    assert_eq!(size_of::<remat_plan_memory_info>(), SIZE_remat_plan_memory_info);
    assert_eq!(offset!(remat_plan_memory_info, arena_bytes), OFFSET_remat_plan_memory_info_arena_bytes);
    assert_eq!(offset!(remat_plan_memory_info, persistent_bytes), OFFSET_remat_plan_memory_info_persistent_bytes);
    assert_eq!(offset!(remat_plan_memory_info, host_bytes), OFFSET_remat_plan_memory_info_host_bytes);
    assert_eq!(offset!(remat_plan_memory_info, alignment), OFFSET_remat_plan_memory_info_alignment);
    assert_eq!(size_of::<remat_version_info>(), SIZE_remat_version_info);
    assert_eq!(offset!(remat_version_info, struct_size), OFFSET_remat_version_info_struct_size);
    assert_eq!(offset!(remat_version_info, api_version), OFFSET_remat_version_info_api_version);
    assert_eq!(offset!(remat_version_info, plan_format_max), OFFSET_remat_version_info_plan_format_max);
    assert_eq!(size_of::<remat_session_options>(), SIZE_remat_session_options);
    assert_eq!(offset!(remat_session_options, struct_size), OFFSET_remat_session_options_struct_size);
    assert_eq!(offset!(remat_session_options, backend), OFFSET_remat_session_options_backend);
    assert_eq!(offset!(remat_session_options, arena), OFFSET_remat_session_options_arena);
    assert_eq!(offset!(remat_session_options, arena_size), OFFSET_remat_session_options_arena_size);
    assert_eq!(offset!(remat_session_options, persistent), OFFSET_remat_session_options_persistent);
    assert_eq!(offset!(remat_session_options, persistent_size), OFFSET_remat_session_options_persistent_size);
    assert_eq!(offset!(remat_session_options, host), OFFSET_remat_session_options_host);
    assert_eq!(offset!(remat_session_options, host_size), OFFSET_remat_session_options_host_size);
    assert_eq!(offset!(remat_session_options, init_params), OFFSET_remat_session_options_init_params);
    assert_eq!(offset!(remat_session_options, threads), OFFSET_remat_session_options_threads);
    assert_eq!(offset!(remat_session_options, communicator), OFFSET_remat_session_options_communicator);
    assert_eq!(size_of::<remat_buffer>(), SIZE_remat_buffer);
    assert_eq!(offset!(remat_buffer, data), OFFSET_remat_buffer_data);
    assert_eq!(offset!(remat_buffer, count), OFFSET_remat_buffer_count);
    assert_eq!(size_of::<remat_communicator>(), SIZE_remat_communicator);
    assert_eq!(offset!(remat_communicator, struct_size), OFFSET_remat_communicator_struct_size);
    assert_eq!(offset!(remat_communicator, rank), OFFSET_remat_communicator_rank);
    assert_eq!(offset!(remat_communicator, size), OFFSET_remat_communicator_size);
    assert_eq!(offset!(remat_communicator, user), OFFSET_remat_communicator_user);
    assert_eq!(offset!(remat_communicator, allreduce_start), OFFSET_remat_communicator_allreduce_start);
    assert_eq!(offset!(remat_communicator, allreduce_wait), OFFSET_remat_communicator_allreduce_wait);
    assert_eq!(remat::version().unwrap().api_version, API_VERSION);
}
