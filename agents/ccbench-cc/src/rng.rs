//! The one seeded generator of the agents: TFRC's S3 round lengths (here) and the traffic
//! models' periods and sizes (`ccbench_common::traffic`) draw from it, and the transport's
//! payload pattern (`ccbench_transport::pattern`) uses its finalizer. Our own code (no
//! dependency) so that a run is reproducible from its seed across builds and versions.
//!
//! It lives in ccbench-cc because this is the lowest crate of the workspace that both users
//! can depend on: ccbench-cc has no dependencies at all (no I/O, no clock, no CLI), and
//! ccbench-common (clap, libc) may depend on it, while the reverse would pull those into the
//! controllers. A crate of its own would only add one more manifest for 40 lines.

/// SplitMix64's increment: 2^64 divided by the golden ratio, odd.
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 (Steele, Lea and Flood 2014; the generator Java's SplittableRandom and the
/// xoshiro authors' seeding use): 64 bits of state, passes BigCrush, one multiply-xorshift
/// chain per output.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

/// SplitMix64's output function (a variant of MurmurHash3's finalizer): unrelated outputs
/// for neighbouring inputs.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in (0, 1] with 53 random bits: never 0, so logarithms and negative powers of
    /// it are finite.
    pub fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs of the reference splitmix64.c for seed 0 and seed 1234567.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut rng = SplitMix64::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn both_unit_intervals_take_the_same_53_bits() {
        let (mut a, mut b) = (SplitMix64::new(42), SplitMix64::new(42));
        for _ in 0..1000 {
            let (closed_open, open_closed) = (a.next_unit(), b.next_open01());
            assert!((0.0..1.0).contains(&closed_open));
            assert!(open_closed > 0.0 && open_closed <= 1.0);
            assert_eq!(open_closed - closed_open, 1.0 / (1u64 << 53) as f64);
        }
    }
}
