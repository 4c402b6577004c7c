//! A small seeded generator and the two distributions the traffic models draw from. Our own
//! code (no dependency) so that a run is reproducible from its seed across builds and versions.

/// SplitMix64 (Steele, Lea and Flood 2014; the generator Java's SplittableRandom and the
/// xoshiro authors' seeding use): 64 bits of state, passes BigCrush, one multiply-xorshift
/// chain per output.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1] with 53 random bits: never 0, so logarithms and negative powers of
    /// it are finite.
    pub fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

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
