//! Test-only helpers for the controllers' unit tests: `config` builds a `Config`. (Tests that
//! need a network, and their helpers, are in `agents/ccbench-sim/tests/controllers/`.)

use crate::Config;

/// A `Config` of 1000-byte packets with these parameters.
pub fn config(params: &[(&str, f64)]) -> Config {
    Config::with_params(1000, params, 0)
}

#[cfg(test)]
mod tests {
    use super::config;

    /// `CCB_STATE_FIELDS("a,b")` of agents/kernel/bpf/<id>.bpf.c, named as the reports name
    /// them (`<name>_x256` becomes `<name>`, workers/bpf_trace.py), or None without a BPF file.
    fn bpf_state_fields(id: &str) -> Option<Vec<String>> {
        let path = format!("{}/../kernel/bpf/{id}.bpf.c", env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(path).ok()?;
        let start = source.find("CCB_STATE_FIELDS(\"")? + "CCB_STATE_FIELDS(\"".len();
        let end = start + source[start..].find('"')?;
        Some(
            source[start..end]
                .split(',')
                .filter(|name| !name.is_empty())
                .map(|name| name.trim_end_matches("_x256").to_string())
                .collect(),
        )
    }

    #[test]
    fn state_names_match_the_bpf_traces() {
        // The window-based controllers of this crate trace exactly the BPF versions' variables.
        for id in ["reno", "bfa", "aaimd", "vegas", "dual"] {
            let controller = crate::new_controller(id, &config(&[])).unwrap();
            let bpf = bpf_state_fields(id).unwrap_or_else(|| panic!("no {id}.bpf.c"));
            assert_eq!(controller.state_names(), bpf, "{id}");
        }
    }

    #[test]
    fn window_based_controllers_start_at_the_initial_window_they_are_given() {
        for &id in crate::ALGORITHMS {
            let mut controller = crate::new_controller(id, &config(&[])).unwrap();
            if id == "tfrc" {
                // Rate-based: no window to start.
                controller.set_initial_window(10.0);
                assert_eq!(controller.cwnd(), f64::INFINITY, "{id}");
                continue;
            }
            assert_eq!(controller.cwnd(), crate::window::INITIAL_CWND, "{id}");
            controller.set_initial_window(10.0);
            assert_eq!(controller.cwnd(), 10.0, "{id}");
            assert_eq!(controller.ssthresh(), f64::INFINITY, "{id}");
        }
    }
}
