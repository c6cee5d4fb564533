//! Trains a plan from Rust: `cargo run --example train -- PLAN.rplan [STEPS]` on the synthetic
//! task of examples/c/train.c (x uniform in [-1, 1), label 1 when the row's sum is positive).
use remat::{BindingKind, Plan, Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: train PLAN.rplan [STEPS]")?;
    let steps: u32 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(100);
    let version = remat::version()?;
    println!("libremat {}.{}.{}, C API {}", version.major, version.minor, version.patch, version.api_version);
    let plan = Plan::open(&std::fs::read(path)?)?;
    let input = plan.bindings(BindingKind::Input).first().cloned().ok_or("the plan has no input")?;
    let label = plan.bindings(BindingKind::Label).first().cloned().ok_or("the plan has no label")?;
    let (rows, cols) = (input.shape[0] as usize, input.shape[1..].iter().product::<i64>() as usize);
    let mut session = Session::new(&plan, "cpu")?;
    let mut state = 12345u32;
    for step in 0..steps {
        let mut x = Vec::with_capacity(rows * cols);
        let mut y = Vec::with_capacity(rows);
        for _ in 0..rows {
            let mut sum = 0.0f32;
            for _ in 0..cols {
                state = state.wrapping_mul(1664525).wrapping_add(1013904223);
                let v = (state >> 8) as f32 / 8388608.0 - 1.0;
                x.push(v);
                sum += v;
            }
            y.push(if sum > 0.0 { 1i32 } else { 0 });
        }
        session.set_input(&input.name, &x)?;
        session.set_input(&label.name, &y)?;
        let loss = session.step()?;
        if step % 10 == 0 || step + 1 == steps {
            println!("step {} loss {:.6}", step + 1, loss);
        }
    }
    Ok(())
}
