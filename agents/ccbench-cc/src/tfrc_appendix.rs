//! A test oracle, shared by TFRC's unit tests (`tfrc.rs`) and its tests through the simulator
//! (`agents/ccbench-sim/tests/controllers/tfrc.rs`, by path: test code of two crates).

/// Seed 004's Appendix written out again, independently of `padhye_rate_pps`, term by
/// term as printed (packets per second).
pub fn appendix_f(wm: f64, p: f64, r: f64, b: f64) -> f64 {
    let w = 2.0 / 3.0 + (4.0 * (1.0 - p) / (3.0 * p) + 4.0 / 9.0).sqrt();
    let q = |w: f64| -> f64 {
        let num = (1.0 - (1.0 - p).powf(3.0))
            * (1.0 + (1.0 - p).powf(3.0) * (1.0 - (1.0 - p).powf(w - 3.0)));
        f64::min(1.0, num / (1.0 - (1.0 - p).powf(w)))
    };
    let g: f64 = (0..=6)
        .map(|i| {
            if i == 0 {
                1.0
            } else {
                2f64.powi(i - 1) * p.powi(i)
            }
        })
        .sum();
    if w < wm {
        ((1.0 - p) / p + w + q(w) / (1.0 - p)) / (r * (w + 1.0) + q(w) * g * b / (1.0 - p))
    } else {
        ((1.0 - p) / p + wm + q(wm) / (1.0 - p))
            / (r * (wm / 4.0 + (1.0 - p) / (p * wm) + 2.0) + q(wm) * g * b / (1.0 - p))
    }
}
