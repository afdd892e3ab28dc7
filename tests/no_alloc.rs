//! "No allocation in the step loop": a counting global allocator sees no allocation of ours over
//! hundreds of DP-SGD steps of every loss family, once the stepper is built.
//!
//! The only allocations in the loop are inside `matrixmultiply::dgemm`, which allocates one
//! packing buffer per call: the softmax loss with m > 4 classes makes 2 matrix products per step
//! and the tanh network 5 (the softmax one-pass kernel none). The test asserts exactly that
//! count, so any allocation of our own (a Vec in the step, a growing buffer) makes it fail. Allocations are counted per thread (the
//! harness's own threads allocate at any time); the models here are small enough that the step
//! runs on the calling thread (the two-thread split starts at m (d + 1) >= 4096).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper,
};
use dpsgd_lab::loss::{
    AppendixLLoss, HuberLoss, Loss, RobustLoss, SharpLoss, SoftmaxKernel, SoftmaxLoss, TanhNet,
};
use dpsgd_lab::rng::{Purpose, stream};

struct Counting;

thread_local! {
    /// Allocations made by this thread. Per thread, so that the test harness's own threads
    /// (its output capture, other tests) never count against the step loop.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // try_with: a thread being torn down has no counter left; its allocations are not ours.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
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
    // (loss, GEMM calls per step)
    let losses: Vec<(Box<dyn Loss>, usize)> = vec![
        (Box::new(SoftmaxLoss::new(d, 3)), 0),
        (Box::new(SoftmaxLoss::new(d, 7)), 2),
        // the one-pass kernel makes no matrix product (on a machine without AVX2/FMA it falls
        // back to the two products)
        (
            Box::new(SoftmaxLoss::new(d, 7).with_kernel(SoftmaxKernel::OnePass)),
            if SoftmaxLoss::new(d, 7)
                .with_kernel(SoftmaxKernel::OnePass)
                .uses_onepass()
            {
                0
            } else {
                2
            },
        ),
        (Box::new(HuberLoss::new(d, 1.0).unwrap()), 0),
        (Box::new(SharpLoss::new(d)), 0),
        (Box::new(AppendixLLoss::new(d)), 0),
        (Box::new(RobustLoss::new(d)), 0),
        (Box::new(TanhNet::new(d, 16, 3, None).unwrap()), 5),
    ];
    for (loss, gemms) in losses {
        let alg = DpSgd::new(
            DpSgdConfig::new(
                1,
                100.0,
                StepSchedule::Constant(0.1),
                // not the 1.0 at which Stepper::new sizes its buffers: the sharp loss's table
                // is refilled at this tau in the loop, in place
                StepSchedule::Constant(0.7),
                NoiseSpec::Multiplier { z: 1.0 },
            )
            .with_projection(Projection::L2Ball { radius: 5.0 })
            .with_output(OutputRule::LastIterate),
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
        let before = allocs();
        for t in 0..300 {
            stepper.step(loss.as_ref(), &data, t, &mut w);
        }
        let after = allocs();
        assert_eq!(
            after - before,
            300 * gemms,
            "{}: {} allocations in 300 steps, {gemms} GEMM calls per step",
            loss.name(),
            after - before
        );
        assert!(stepper.sampled > 0);
    }
}
