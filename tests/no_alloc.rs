//! "No allocation in the step loop": a counting global allocator sees zero allocations over
//! hundreds of DP-SGD steps of every loss family, once the stepper is built.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, Init, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper,
};
use dpsgd_lab::loss::{
    AppendixLLoss, HuberLoss, Loss, RobustLoss, SharpLoss, SoftmaxLoss, TanhNet,
};
use dpsgd_lab::rng::{Purpose, stream};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static TRACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        if TRACE.swap(false, Ordering::Relaxed) {
            eprintln!("{}", std::backtrace::Backtrace::force_capture());
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn step_loop_does_not_allocate() {
    let (n, d) = (3000, 8);
    let x: Vec<f64> = (0..n * d)
        .map(|i| ((i * 7919) % 1000) as f64 / 250.0 - 2.0)
        .collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
    let data = Dataset::new(x, y, d).unwrap();
    let losses: Vec<Box<dyn Loss>> = vec![
        Box::new(SoftmaxLoss::new(d, 3)),
        Box::new(SoftmaxLoss::new(d, 7)),
        Box::new(HuberLoss::new(d, 1.0).unwrap()),
        Box::new(SharpLoss::new(d)),
        Box::new(AppendixLLoss::new(d)),
        Box::new(RobustLoss::new(d)),
        Box::new(TanhNet::new(d, 16, 3, None).unwrap()),
    ];
    for loss in losses {
        let alg = DpSgd::new(
            DpSgdConfig {
                steps: 1,
                batch_size: 100.0,
                learning_rate: StepSchedule::Constant(0.1),
                clip_norm: StepSchedule::Constant(1.0),
                noise: NoiseSpec::Multiplier { z: 1.0 },
                projection: Projection::L2Ball { radius: 5.0 },
                output: OutputRule::LastIterate,
                init: Init::Zeros,
            },
            n,
            None,
        )
        .unwrap();
        let mut w = vec![0.0; loss.param_dim()];
        let mut stepper = Stepper::new(
            &alg,
            loss.as_ref(),
            &data,
            stream(1, 0, Purpose::Sampling),
            stream(1, 0, Purpose::Noise),
        );
        let before = ALLOCS.load(Ordering::Relaxed);
        TRACE.store(true, Ordering::Relaxed);
        for t in 0..300 {
            stepper.step(loss.as_ref(), &data, t, &mut w);
        }
        let after = ALLOCS.load(Ordering::Relaxed);
        assert_eq!(
            after - before,
            0,
            "{}: {} allocations in 300 steps",
            loss.name(),
            after - before
        );
        assert!(stepper.sampled > 0);
    }
}
