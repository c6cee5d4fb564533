//! remat::mpi (feature `mpi`) in one process, MPI's singleton: a timeout out of range is refused
//! before MPI starts; a World of one rank trains a data-parallel plan as a session of the plan
//! without data-parallel training does, bit for bit (a sum over one rank, divided by one); a
//! second join, and a join after leaving, are refused (MPI starts once a process). Under mpirun,
//! .ci/rust_check runs examples/data_parallel.rs on two ranks.
use remat::mpi::World;
use remat::{Plan, Session};
use std::process::Command;

const INVALID_ARGUMENT: i32 = 1;
const FAILED_PRECONDITION: i32 = 15;

fn compiled_plan(data_parallel: bool) -> Vec<u8> {
    let cli = std::env::var("REMAT_CLI").expect("REMAT_CLI names the remat command");
    let out = std::env::temp_dir().join(format!("remat-rust-mpi-{}-{}.rplan", std::process::id(), data_parallel));
    let mut args = vec!["compile", "mlp:layers=2,width=16,in=8,classes=2", "--batch", "4", "--optimizer",
                        "sgd:lr=0.1,momentum=0.9"];
    if data_parallel {
        args.extend_from_slice(&["--data-parallel", "--bucket-size", "1024"]);
    }
    let done = Command::new(cli).args(&args).arg("-o").arg(&out).output().expect("remat compile");
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    bytes
}

/// Five steps of |session| on a fixed batch; the losses and the first layer's weights.
fn train(session: &mut Session) -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = (0..32).map(|i| ((i * 37 % 17) as f32) / 8.0 - 1.0).collect();
    let y: Vec<i32> = vec![0, 1, 1, 0];
    let mut losses = Vec::new();
    for _ in 0..5 {
        session.set_input("x", &x).unwrap();
        session.set_input("labels", &y).unwrap();
        losses.push(session.step().unwrap());
    }
    (losses, session.read_param("fc0.weight").unwrap())
}

#[test]
fn one_rank_trains_as_without_data_parallel_and_mpi_joins_once() {
    let e = World::join(0.0).err().expect("a timeout of 0 s");
    assert_eq!(e.status, INVALID_ARGUMENT);
    assert!(e.message.contains("timeout_seconds is"), "{}", e.message);
    let e = World::join_nccl(30.0, -2).err().expect("a device of -2");
    assert_eq!(e.status, INVALID_ARGUMENT);
    assert!(e.message.contains("cuda_device is -2"), "{}", e.message);

    let world = World::join(30.0).unwrap();
    assert_eq!((world.rank(), world.size(), world.backend()), (0, 1, None));
    let e = World::join(30.0).err().expect("a second join");
    assert_eq!(e.status, FAILED_PRECONDITION, "{}", e);

    let parallel = Plan::open(&compiled_plan(true)).unwrap();
    let alone = Plan::open(&compiled_plan(false)).unwrap();
    let with_mpi = train(&mut Session::with_world(&parallel, "cpu", &world).unwrap());
    let without = train(&mut Session::new(&alone, "cpu").unwrap());
    assert!(with_mpi == without, "one rank differs from training without data-parallel: {:?} {:?}", with_mpi.0,
            without.0);
    drop(world);

    let e = World::join(30.0).err().expect("a join after leaving");
    assert_eq!(e.status, FAILED_PRECONDITION, "{}", e);
    let e = World::join_nccl(30.0, -1).err().expect("a NCCL join after leaving");
    assert_eq!(e.status, FAILED_PRECONDITION, "{}", e);
}
