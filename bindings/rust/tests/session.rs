//! The safe wrapper against the built library, on a plan the `remat` command (REMAT_CLI)
//! compiles: training, parameters, states, and the failure paths' statuses and messages.
use remat::{BindingKind, Plan, Session};
use std::process::Command;

fn compiled_plan(args: &[&str]) -> Vec<u8> {
    let cli = std::env::var("REMAT_CLI").expect("REMAT_CLI names the remat command");
    let out = std::env::temp_dir().join(format!("remat-rust-{}-{}.rplan", std::process::id(), args.join("_").len()));
    let status = Command::new(cli)
        .arg("compile")
        .args(args)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("running remat compile");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    bytes
}

fn batch(rows: usize, cols: usize) -> (Vec<f32>, Vec<i32>) {
    let mut state = 12345u32;
    let mut x = Vec::new();
    let mut y = Vec::new();
    for _ in 0..rows {
        let mut sum = 0.0f32;
        for _ in 0..cols {
            state = state.wrapping_mul(1664525).wrapping_add(1013904223);
            let v = (state >> 8) as f32 / 8388608.0 - 1.0;
            x.push(v);
            sum += v;
        }
        y.push(if sum > 0.0 { 1 } else { 0 });
    }
    (x, y)
}

#[test]
fn a_session_trains_and_its_state_resumes_exactly() {
    let plan = Plan::open(&compiled_plan(&["mlp:layers=2,width=16,in=8,classes=2", "--batch", "4", "--strategy",
                                           "sqrt", "--optimizer", "adam:lr=0.01"]))
        .unwrap();
    assert_eq!(plan.memory().alignment, 64);
    let inputs = plan.bindings(BindingKind::Input);
    assert_eq!((inputs[0].name.as_str(), inputs[0].shape.clone()), ("x", vec![4, 8]));
    let (x, y) = batch(4, 8);
    let mut a = Session::new(&plan, "cpu").unwrap();
    a.set_input("x", &x).unwrap();
    a.set_input("labels", &y).unwrap();
    let first = a.step().unwrap();
    let mut last = first;
    for _ in 0..20 {
        last = a.step().unwrap();
    }
    assert!(last < first, "loss {} -> {}", first, last);
    let saved = a.save_state().unwrap();
    let after: Vec<f32> = {
        a.step().unwrap();
        a.read_param("fc0.weight").unwrap()
    };
    let mut b = Session::new(&plan, "cpu").unwrap();
    b.load_state(&saved).unwrap();
    assert_eq!(b.step_count(), 21);
    b.set_input("x", &x).unwrap();
    b.set_input("labels", &y).unwrap();
    b.step().unwrap();
    assert_eq!(b.read_param::<f32>("fc0.weight").unwrap(), after);
    b.write_param("fc0.weight", &vec![0.25f32; 16 * 8]).unwrap();
    assert!(b.read_param::<f32>("fc0.weight").unwrap().iter().all(|v| *v == 0.25));
}

#[test]
fn failures_carry_their_status_and_message() {
    let corrupt = Plan::open(b"definitely not a plan").err().unwrap();
    assert_eq!(corrupt.status, 2);
    let plan = Plan::open(&compiled_plan(&["mlp:layers=2,width=16,in=8,classes=2", "--batch", "4"])).unwrap();
    let missing = Session::new(&plan, "nosuchbackend").err().unwrap();
    assert_eq!(missing.status, 13);
    assert!(missing.message.contains("nosuchbackend"), "{}", missing.message);
    let mut s = Session::new(&plan, "cpu").unwrap();
    let wrong = s.set_input("x", &vec![0i32; 32]).err().unwrap();
    assert_eq!(wrong.status, 1);
    assert!(wrong.message.contains("\"x\""), "{}", wrong.message);
    assert_eq!(s.set_input("y", &vec![0f32; 32]).err().unwrap().status, 11);
    assert_eq!(s.step().err().unwrap().status, 15); // no input set
    s.set_input("x", &vec![0f32; 32]).unwrap();
    s.set_input("labels", &vec![9i32; 4]).unwrap();
    let range = s.step().err().unwrap();
    assert_eq!(range.status, 12);
    assert!(range.message.contains("label 9"), "{}", range.message);
    assert!(format!("{}", range).starts_with("value out of range: op"), "{}", range);
    assert_eq!(s.load_state(b"short").err().unwrap().status, 20);
    assert_eq!(s.set_learning_rate(f32::NAN).err().unwrap().status, 1);
    let unscaled = s.loss_scale().err().unwrap();
    assert_eq!(unscaled.status, 11); // REMAT_ERROR_NOT_FOUND: a float32 plan scales nothing
    assert!(unscaled.message.contains("no loss scaling"), "{}", unscaled.message);
}

#[test]
fn an_fp16_plan_reads_its_loss_scale() {
    let bytes = compiled_plan(&["mlp:layers=2,width=8,in=8,classes=2", "--batch", "4", "--precision", "fp16"]);
    let plan = Plan::open(&bytes).unwrap();
    let s = Session::new(&plan, "cpu").unwrap();
    assert_eq!(s.loss_scale().unwrap(), 65536.0); // --loss-scale dynamic's default for fp16
}
