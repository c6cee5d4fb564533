//! Links libremat (REMAT_LIB_DIR names its directory; else the system's), and with the `mpi`
//! feature libremat_mpi (REMAT_MPI_LIB_DIR, else the same), and measures the C
//! structs of remat.h with the C compiler (REMAT_INCLUDE_DIR, else ../../include), so that a
//! test can compare them with the Rust declarations in src/sys.rs.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    if let Ok(dir) = env::var("REMAT_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=remat");
    println!("cargo:rerun-if-env-changed=REMAT_LIB_DIR");
    // The `mpi` feature: libremat_mpi too.
    if env::var_os("CARGO_FEATURE_MPI").is_some() {
        if let Ok(dir) = env::var("REMAT_MPI_LIB_DIR") {
            println!("cargo:rustc-link-search=native={}", dir);
        }
        println!("cargo:rustc-link-lib=dylib=remat_mpi");
    }
    println!("cargo:rerun-if-env-changed=REMAT_MPI_LIB_DIR");
    println!("cargo:rerun-if-env-changed=REMAT_INCLUDE_DIR");

    let include = env::var("REMAT_INCLUDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| manifest.join("..").join("..").join("include"));
    println!("cargo:rerun-if-changed={}", include.join("remat").join("remat.h").display());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let source = out.join("layout.c");
    fs::write(&source, LAYOUT_PROGRAM).unwrap();
    let program = out.join("layout");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .arg("-std=c99")
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .status()
        .expect("running the C compiler to measure remat.h's structs");
    assert!(status.success(), "the C compiler could not build the layout probe");
    let printed = Command::new(&program).output().expect("running the layout probe");
    assert!(printed.status.success());
    fs::write(out.join("c_layout.rs"), printed.stdout).unwrap();
}

/// Prints `pub const NAME: usize = N;` for the size and each field offset of every struct.
const LAYOUT_PROGRAM: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include "remat/remat.h"
#define SIZE(T) printf("pub const SIZE_%s: usize = %zu;\n", #T, sizeof(T))
#define OFFSET(T, F) printf("pub const OFFSET_%s_%s: usize = %zu;\n", #T, #F, offsetof(T, F))
int main(void) {
  SIZE(remat_tensor_info); OFFSET(remat_tensor_info, name); OFFSET(remat_tensor_info, dtype);
  OFFSET(remat_tensor_info, rank); OFFSET(remat_tensor_info, dims); OFFSET(remat_tensor_info, bytes);
  SIZE(remat_plan_memory_info); OFFSET(remat_plan_memory_info, arena_bytes);
  OFFSET(remat_plan_memory_info, persistent_bytes); OFFSET(remat_plan_memory_info, host_bytes);
  OFFSET(remat_plan_memory_info, alignment);
  SIZE(remat_version_info); OFFSET(remat_version_info, struct_size); OFFSET(remat_version_info, api_version);
  OFFSET(remat_version_info, plan_format_max);
  SIZE(remat_session_options); OFFSET(remat_session_options, struct_size); OFFSET(remat_session_options, backend);
  OFFSET(remat_session_options, arena); OFFSET(remat_session_options, arena_size);
  OFFSET(remat_session_options, persistent); OFFSET(remat_session_options, persistent_size);
  OFFSET(remat_session_options, host); OFFSET(remat_session_options, host_size);
  OFFSET(remat_session_options, init_params); OFFSET(remat_session_options, threads);
  OFFSET(remat_session_options, communicator);
  SIZE(remat_buffer); OFFSET(remat_buffer, data); OFFSET(remat_buffer, count);
  SIZE(remat_communicator); OFFSET(remat_communicator, struct_size); OFFSET(remat_communicator, rank);
  OFFSET(remat_communicator, size); OFFSET(remat_communicator, user);
  OFFSET(remat_communicator, allreduce_start); OFFSET(remat_communicator, allreduce_wait);
  printf("pub const API_VERSION: u32 = %d;\n", REMAT_API_VERSION);
  return 0;
}
"#;
