//! Data-parallel sessions through the crate's Communicator trait: two ranks, each a session in
//! a thread of this process joined by an in-process communicator, train as one session of the
//! whole batch does (within float tolerance: the sums are grouped by rank) and hold the same
//! bits; a communicator's error or panic stops the step with REMAT_ERROR_CALLBACK naming the
//! bucket; and the library's refusals of a missing or needless communicator.
use remat::{Buffer, Communicator, Error, Plan, Session};
use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

const MODEL: &str = "mlp:layers=3,width=16,in=8,classes=4";
const CALLBACK: i32 = 21;
const INVALID_ARGUMENT: i32 = 1;

fn compiled_plan(args: &[&str]) -> Vec<u8> {
    // A file of its own per call: the tests run in parallel threads.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let cli = std::env::var("REMAT_CLI").expect("REMAT_CLI names the remat command");
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("remat-rust-dp-{}-{}.rplan", std::process::id(), call));
    let status = Command::new(cli).arg("compile").args(args).arg("-o").arg(&out).output().expect("remat compile");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    bytes
}

fn plan_of(batch: usize, data_parallel: bool) -> Vec<u8> {
    let batch = batch.to_string();
    let mut args = vec![MODEL, "--batch", batch.as_str(), "--optimizer", "sgd:lr=0.1,momentum=0.9"];
    if data_parallel {
        // Several buckets even for this small model.
        args.extend_from_slice(&["--data-parallel", "--bucket-size", "2048"]);
    }
    compiled_plan(&args)
}

/// Rows [first, first + rows) of a fixed batch: 8 floats in [-1, 1) and a label in [0, 4) each.
fn rows(first: usize, rows: usize) -> (Vec<f32>, Vec<i32>) {
    let mut x = Vec::new();
    let mut y = Vec::new();
    for r in first..first + rows {
        for c in 0..8 {
            let h = ((r * 8 + c) as u32).wrapping_mul(2654435761).rotate_left(13).wrapping_mul(40503);
            x.push((h >> 8) as f32 / 8388608.0 - 1.0);
        }
        y.push((r % 4) as i32);
    }
    (x, y)
}

/// The ranks of one process: the last rank to start a bucket sums it, in rank order, into every
/// rank's buffers (addresses kept as integers: each stays valid until its rank's wait returns).
struct World {
    size: usize,
    state: Mutex<HashMap<(u32, u64), Entry>>,
    done: Condvar,
}

#[derive(Default)]
struct Entry {
    parts: Vec<Vec<(usize, usize)>>,
    arrived: usize,
    summed: bool,
}

struct Rank {
    world: Arc<World>,
    rank: usize,
    rounds: HashMap<u32, u64>,
}

impl Communicator for Rank {
    fn rank(&self) -> i32 {
        self.rank as i32
    }
    fn size(&self) -> i32 {
        self.world.size as i32
    }
    fn allreduce_start(&mut self, bucket: u32, parts: &mut [Buffer]) -> remat::Result<()> {
        let round = self.rounds.entry(bucket).or_insert(0);
        let key = (bucket, *round);
        *round += 1;
        let mut state = self.world.state.lock().unwrap();
        let entry = state.entry(key).or_default();
        entry.parts.resize(self.world.size, Vec::new());
        entry.parts[self.rank] = parts.iter().map(|b| (b.as_mut_ptr() as usize, b.len())).collect();
        entry.arrived += 1;
        if entry.arrived == self.world.size {
            for k in 0..parts.len() {
                for i in 0..parts[k].len() {
                    let at = |r: usize| unsafe { (entry.parts[r][k].0 as *mut f32).add(i) };
                    let mut sum = unsafe { *at(0) };
                    for r in 1..self.world.size {
                        sum += unsafe { *at(r) };
                    }
                    for r in 0..self.world.size {
                        unsafe { *at(r) = sum };
                    }
                }
            }
            entry.summed = true;
            self.world.done.notify_all();
        }
        Ok(())
    }
    fn allreduce_wait(&mut self, bucket: u32) -> remat::Result<()> {
        // A rank whose peer failed must not wait for ever: the test fails instead of hanging.
        let key = (bucket, self.rounds[&bucket] - 1);
        let state = self.world.state.lock().unwrap();
        let (state, _) = self
            .world
            .done
            .wait_timeout_while(state, std::time::Duration::from_secs(60), |s| !s[&key].summed)
            .unwrap();
        if !state[&key].summed {
            return Err(Error { status: 13, message: format!("bucket {}: no peer within 60 s", bucket) });
        }
        Ok(())
    }
}

const STEPS: usize = 3;

/// Trains |plan| for STEPS steps on rows [first, first + batch) from |initial| parameters, with
/// |communicator| where given; its parameters by name.
fn train(plan: &[u8], first: usize, batch: usize, initial: &HashMap<String, Vec<f32>>,
         communicator: Option<Box<dyn Communicator>>) -> HashMap<String, Vec<f32>> {
    let plan = Plan::open(plan).unwrap();
    let mut session = match communicator {
        Some(c) => Session::with_communicator(&plan, "cpu", c).unwrap(),
        None => Session::new(&plan, "cpu").unwrap(),
    };
    for (name, values) in initial {
        session.write_param(name, values).unwrap();
    }
    let (x, y) = rows(first, batch);
    for _ in 0..STEPS {
        session.set_input("x", &x).unwrap();
        session.set_input("labels", &y).unwrap();
        session.step().unwrap();
    }
    initial.keys().map(|name| (name.clone(), session.read_param::<f32>(name).unwrap())).collect()
}

#[test]
fn two_ranks_train_as_one_session_of_the_whole_batch() {
    let whole_plan = plan_of(4, false);
    let initial: HashMap<String, Vec<f32>> = {
        let plan = Plan::open(&whole_plan).unwrap();
        let mut session = Session::new(&plan, "cpu").unwrap();
        plan.bindings(remat::BindingKind::Param)
            .iter()
            .map(|p| (p.name.clone(), session.read_param::<f32>(&p.name).unwrap()))
            .collect()
    };
    let whole = train(&whole_plan, 0, 4, &initial, None);
    let parallel = plan_of(2, true);
    let world = Arc::new(World { size: 2, state: Mutex::new(HashMap::new()), done: Condvar::new() });
    let ranks: Vec<_> = (0..2)
        .map(|r| {
            let (plan, initial, world) = (parallel.clone(), initial.clone(), world.clone());
            std::thread::spawn(move || {
                let rank = Box::new(Rank { world, rank: r, rounds: HashMap::new() });
                train(&plan, 2 * r, 2, &initial, Some(rank))
            })
        })
        .collect();
    let ranks: Vec<_> = ranks.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(ranks[0] == ranks[1], "the ranks' parameters differ");
    for (name, values) in &whole {
        let largest = values.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        let worst = values.iter().zip(&ranks[0][name]).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst <= 2e-5 * largest, "{}: two ranks differ from one session by {}", name, worst);
    }
}

/// One rank that fails (or panics in) the start of bucket |fail|.
struct Failing {
    fail: u32,
    panic: bool,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Communicator for Failing {
    fn rank(&self) -> i32 {
        0
    }
    fn size(&self) -> i32 {
        1
    }
    fn allreduce_start(&mut self, bucket: u32, _parts: &mut [Buffer]) -> remat::Result<()> {
        self.calls.lock().unwrap().push(format!("start {}", bucket));
        if bucket == self.fail {
            if self.panic {
                panic!("a communicator that panics");
            }
            return Err(Error { status: 13, message: "no peer".into() });
        }
        Ok(())
    }
    fn allreduce_wait(&mut self, bucket: u32) -> remat::Result<()> {
        self.calls.lock().unwrap().push(format!("wait {}", bucket));
        Ok(())
    }
}

#[test]
fn a_failing_or_panicking_communicator_stops_the_step_naming_the_bucket() {
    let plan = Plan::open(&plan_of(2, true)).unwrap();
    let (x, y) = rows(0, 2);
    for panic in [false, true] {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let failing = Box::new(Failing { fail: 1, panic, calls: calls.clone() });
        let mut session = Session::with_communicator(&plan, "cpu", failing).unwrap();
        session.set_input("x", &x).unwrap();
        session.set_input("labels", &y).unwrap();
        let e = session.step().unwrap_err();
        let returned = if panic { "returned 21" } else { "returned 13" };
        assert_eq!(e.status, CALLBACK, "{}", e);
        assert!(e.message.contains(&format!("allreduce_start of bucket 1 {}", returned)), "{}", e.message);
        // The bucket started before the failure is still waited for.
        assert_eq!(*calls.lock().unwrap(), vec!["start 0", "start 1", "wait 0"]);
    }
}

#[test]
fn a_missing_or_needless_communicator_is_refused() {
    let parallel = Plan::open(&plan_of(2, true)).unwrap();
    let e = Session::new(&parallel, "cpu").err().expect("a data-parallel plan without a communicator");
    assert_eq!(e.status, INVALID_ARGUMENT);
    assert!(e.message.contains("options.communicator is NULL"), "{}", e.message);
    let alone = Plan::open(&plan_of(2, false)).unwrap();
    let world = Arc::new(World { size: 2, state: Mutex::new(HashMap::new()), done: Condvar::new() });
    let rank = Box::new(Rank { world, rank: 0, rounds: HashMap::new() });
    let e = Session::with_communicator(&alone, "cpu", rank).err().expect("two ranks on a plan of one");
    assert_eq!(e.status, INVALID_ARGUMENT);
    assert!(e.message.contains("has 2 ranks, but the plan is not data-parallel"), "{}", e.message);
}
