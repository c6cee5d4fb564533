//! Data-parallel training from Rust under MPI (feature `mpi`):
//! `mpirun -np N data_parallel PLAN.rplan [STEPS]` with a plan compiled with `--data-parallel`.
//! Every rank takes its rows of each batch of N x B rows (the synthetic task of train.rs: x
//! uniform in [-1, 1), label 1 when the row's sum is positive) and, at the end, prints its loss
//! and a hash of its parameters' bytes, which is the same on every rank.
use remat::mpi::World;
use remat::{BindingKind, Plan, Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: mpirun -np N data_parallel PLAN.rplan [STEPS]")?;
    let steps: u32 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(50);
    let world = World::join(30.0)?;
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let plan = Plan::open(&std::fs::read(path)?)?;
    let input = plan.bindings(BindingKind::Input).first().cloned().ok_or("the plan has no input")?;
    let label = plan.bindings(BindingKind::Label).first().cloned().ok_or("the plan has no label")?;
    let (rows, cols) = (input.shape[0] as usize, input.shape[1..].iter().product::<i64>() as usize);
    let mut session = Session::with_world(&plan, "cpu", &world)?;
    let mut state = 12345u32;
    let (mut first, mut last) = (0.0f32, 0.0f32);
    for step in 0..steps {
        // The whole batch of every rank's rows, drawn alike on each rank; this rank keeps its own.
        let (mut x, mut y) = (Vec::with_capacity(rows * cols), Vec::with_capacity(rows));
        for row in 0..size * rows {
            let mut sum = 0.0f32;
            for _ in 0..cols {
                state = state.wrapping_mul(1664525).wrapping_add(1013904223);
                let v = (state >> 8) as f32 / 8388608.0 - 1.0;
                sum += v;
                if row / rows == rank {
                    x.push(v);
                }
            }
            if row / rows == rank {
                y.push(if sum > 0.0 { 1i32 } else { 0 });
            }
        }
        session.set_input(&input.name, &x)?;
        session.set_input(&label.name, &y)?;
        last = session.step()?;
        if step == 0 {
            first = last;
        }
    }
    // FNV-1a over every parameter's bytes, in plan order.
    let mut hash = 0xcbf29ce484222325u64;
    for p in plan.bindings(BindingKind::Param) {
        for v in session.read_param::<f32>(&p.name)? {
            for b in v.to_le_bytes() {
                hash = (hash ^ b as u64).wrapping_mul(0x100000001b3);
            }
        }
    }
    println!("rank {} of {}: loss {:.6} -> {:.6}, parameters {:016x}", rank, size, first, last, hash);
    drop(session); // before the World leaves
    Ok(())
}
