//! The two distributions the traffic models draw from, over the agents' one seeded generator
//! (`ccbench_cc::rng`). Our own code (no dependency) so that a run is reproducible from its
//! seed across builds and versions.

pub use ccbench_cc::rng::SplitMix64;

/// Pareto distribution given by its mean and shape: P(X > x) = (scale / x)^shape for
/// x >= scale, with scale = mean * (shape - 1) / shape. The mean exists only for shape > 1
/// (callers validate that).
#[derive(Debug, Clone, Copy)]
pub struct Pareto {
    pub scale: f64,
    pub shape: f64,
}

impl Pareto {
    pub fn with_mean(mean: f64, shape: f64) -> Self {
        Self {
            scale: mean * (shape - 1.0) / shape,
            shape,
        }
    }

    /// Inverse transform: X = scale * U^(-1/shape) for U uniform in (0, 1].
    pub fn sample(&self, rng: &mut SplitMix64) -> f64 {
        self.scale * rng.next_open01().powf(-1.0 / self.shape)
    }
}

/// Exponential distribution with the given mean (inverse transform: -mean * ln U).
pub fn exponential(mean: f64, rng: &mut SplitMix64) -> f64 {
    -mean * rng.next_open01().ln()
}
