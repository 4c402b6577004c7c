//! The spec's tunables (`flows[i].params`), read in one place with the rules of
//! `schemas/algorithms.py` (`Parameter`): every name an algorithm does not declare, every value
//! out of [minimum, maximum], and every fractional value of an `integer` parameter is a
//! `ConfigError` naming the algorithm and the parameter.
//!
//! An algorithm declares each tunable once, with its default and range, as it reads it:
//!
//! ```
//! # use ccbench_cc::{Config, params::Params};
//! # let config = Config { mss: 1000, params: Default::default(), seed: 0 };
//! let mut p = Params::new("vegas", &config);
//! let alpha = p.integer("alpha", 1, 0, 100).unwrap();
//! p.finish().unwrap(); // refuses names nobody declared
//! # assert_eq!(alpha, 1);
//! ```
//!
//! `declared_parameters` replays an algorithm's constructor and returns what it declared, so a
//! test compares every algorithm with the schema.

use std::cell::RefCell;
use std::collections::BTreeSet;

use crate::{Config, ConfigError};

/// One declared tunable, as `schemas/algorithms.py`'s `Parameter` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: f64,
    pub minimum: f64,
    pub maximum: f64,
    pub integer: bool,
}

thread_local! {
    /// Some while `declared_parameters` replays a constructor on this thread.
    static RECORDER: RefCell<Option<Vec<ParamSpec>>> = const { RefCell::new(None) };
}

/// Reads one algorithm's tunables from a `Config`.
pub struct Params<'a> {
    algorithm: &'a str,
    config: &'a Config,
    declared: BTreeSet<&'static str>,
}

impl<'a> Params<'a> {
    pub fn new(algorithm: &'a str, config: &'a Config) -> Params<'a> {
        Params {
            algorithm,
            config,
            declared: BTreeSet::new(),
        }
    }

    /// A real-valued tunable: the spec's value or `default`, within [minimum, maximum].
    pub fn real(
        &mut self,
        name: &'static str,
        default: f64,
        minimum: f64,
        maximum: f64,
    ) -> Result<f64, ConfigError> {
        self.declare(name, default, minimum, maximum, false)
    }

    /// A count or a choice: fractional values are refused.
    pub fn integer(
        &mut self,
        name: &'static str,
        default: i64,
        minimum: i64,
        maximum: i64,
    ) -> Result<i64, ConfigError> {
        let value = self.declare(name, default as f64, minimum as f64, maximum as f64, true)?;
        Ok(value as i64)
    }

    /// A 0/1 choice.
    pub fn flag(&mut self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        Ok(self.integer(name, i64::from(default), 0, 1)? == 1)
    }

    fn declare(
        &mut self,
        name: &'static str,
        default: f64,
        minimum: f64,
        maximum: f64,
        integer: bool,
    ) -> Result<f64, ConfigError> {
        debug_assert!(
            (minimum..=maximum).contains(&default),
            "{}: default of {name} out of its own range",
            self.algorithm
        );
        self.declared.insert(name);
        RECORDER.with(|recorder| {
            if let Some(list) = recorder.borrow_mut().as_mut() {
                list.push(ParamSpec {
                    name,
                    default,
                    minimum,
                    maximum,
                    integer,
                });
            }
        });
        let Some(&value) = self.config.params.get(name) else {
            return Ok(default);
        };
        let algorithm = self.algorithm;
        if !value.is_finite() {
            return Err(ConfigError(format!(
                "params.{name}: {value} is not a finite number ({algorithm})"
            )));
        }
        if integer && value.fract() != 0.0 {
            return Err(ConfigError(format!(
                "params.{name}: {value} is not an integer ({algorithm} takes a whole number)"
            )));
        }
        if value < minimum || value > maximum {
            return Err(ConfigError(format!(
                "params.{name}: {value} is out of range [{minimum}, {maximum}] for {algorithm}"
            )));
        }
        Ok(value)
    }

    /// Refuses the spec's parameters this algorithm did not declare.
    pub fn finish(self) -> Result<(), ConfigError> {
        let unknown: Vec<&str> = self
            .config
            .params
            .keys()
            .map(String::as_str)
            .filter(|name| !self.declared.contains(name))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let known: Vec<&str> = self.declared.iter().copied().collect();
        Err(ConfigError(format!(
            "params.{}: {} has no such parameter (it takes: {})",
            unknown[0],
            self.algorithm,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )))
    }
}

/// The tunables an algorithm's constructor declares, in declaration order.
pub fn declared_parameters(id: &str) -> Result<Vec<ParamSpec>, ConfigError> {
    let config = Config {
        mss: 1000,
        params: Default::default(),
        seed: 0,
    };
    RECORDER.with(|recorder| *recorder.borrow_mut() = Some(Vec::new()));
    let built = crate::new_controller(id, &config);
    let declared = RECORDER.with(|recorder| recorder.borrow_mut().take().unwrap_or_default());
    built.map(|_| declared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;
    use std::collections::BTreeMap;

    #[test]
    fn defaults_values_and_errors_name_the_parameter() {
        let c = config(&[("x", 0.25), ("n", 3.0)]);
        let mut p = Params::new("algo", &c);
        assert_eq!(p.real("x", 0.5, 0.0, 1.0), Ok(0.25));
        assert_eq!(p.integer("n", 1, 0, 5), Ok(3));
        assert_eq!(p.real("unset", 0.5, 0.0, 1.0), Ok(0.5));
        assert_eq!(p.finish(), Ok(()));

        let c = config(&[("x", 1.5)]);
        let err = Params::new("algo", &c)
            .real("x", 0.5, 0.0, 1.0)
            .unwrap_err();
        assert!(
            err.0.contains("params.x") && err.0.contains("out of range"),
            "{err}"
        );

        let c = config(&[("n", 2.5)]);
        let err = Params::new("algo", &c).integer("n", 1, 0, 5).unwrap_err();
        assert!(
            err.0.contains("params.n") && err.0.contains("not an integer"),
            "{err}"
        );

        let c = config(&[("x", f64::NAN)]);
        let err = Params::new("algo", &c)
            .real("x", 0.5, 0.0, 1.0)
            .unwrap_err();
        assert!(err.0.contains("params.x"), "{err}");

        let c = config(&[("bogus", 1.0)]);
        let mut p = Params::new("algo", &c);
        p.real("x", 0.5, 0.0, 1.0).unwrap();
        let err = p.finish().unwrap_err();
        assert_eq!(
            err.0,
            "params.bogus: algo has no such parameter (it takes: x)"
        );
    }

    /// Every algorithm's tunables as `schemas/algorithms.py` declares them for the userspace
    /// runtime: (name, default, minimum, maximum, integer) per algorithm id.
    fn schema_parameters() -> BTreeMap<String, Vec<ParamSpecOwned>> {
        const DUMP: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
from schemas import algorithms as a
userspace = getattr(a, "USERSPACE_PARAMETERS", {})
for algorithm in a.Algorithm:
    print(algorithm.value)
    for p in a.PARAMETERS.get(algorithm, ()) + userspace.get(algorithm, ()):
        print(" ", p.name, repr(float(p.default)), repr(float(p.minimum)),
              repr(float(p.maximum)), int(p.integer))
"#;
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let venv = format!("{root}/.venv/bin/python3");
        let python = if std::path::Path::new(&venv).exists() {
            venv
        } else {
            "python3".to_string()
        };
        let output = std::process::Command::new(&python)
            .args(["-c", DUMP, root])
            .output()
            .unwrap_or_else(|e| panic!("running {python}: {e}"));
        assert!(
            output.status.success(),
            "{python} could not read schemas/algorithms.py: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut out: BTreeMap<String, Vec<ParamSpecOwned>> = BTreeMap::new();
        let mut current = String::new();
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            if let Some(fields) = line.strip_prefix("  ") {
                let f: Vec<&str> = fields.split(' ').collect();
                let number = |s: &str| s.parse::<f64>().unwrap();
                out.get_mut(&current).unwrap().push(ParamSpecOwned {
                    name: f[0].to_string(),
                    default: number(f[1]),
                    minimum: number(f[2]),
                    maximum: number(f[3]),
                    integer: f[4] == "1",
                });
            } else {
                current = line.to_string();
                out.insert(current.clone(), Vec::new());
            }
        }
        out
    }

    #[derive(Debug, PartialEq)]
    struct ParamSpecOwned {
        name: String,
        default: f64,
        minimum: f64,
        maximum: f64,
        integer: bool,
    }

    #[test]
    fn every_algorithm_declares_the_schemas_parameters() {
        let schema = schema_parameters();
        let mut mismatches = Vec::new();
        for id in crate::ALGORITHMS {
            let declared: Vec<ParamSpecOwned> = declared_parameters(id)
                .unwrap()
                .into_iter()
                .map(|p| ParamSpecOwned {
                    name: p.name.to_string(),
                    default: p.default,
                    minimum: p.minimum,
                    maximum: p.maximum,
                    integer: p.integer,
                })
                .collect();
            let mut expected = schema
                .get(*id)
                .unwrap_or_else(|| panic!("{id} is not an Algorithm of the schema"))
                .iter()
                .collect::<Vec<_>>();
            let mut declared_sorted = declared.iter().collect::<Vec<_>>();
            expected.sort_by(|a, b| a.name.cmp(&b.name));
            declared_sorted.sort_by(|a, b| a.name.cmp(&b.name));
            if expected != declared_sorted {
                mismatches.push(format!(
                    "{id}: schema {expected:?}\n  controller {declared_sorted:?}"
                ));
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }

    #[test]
    fn every_declared_parameter_is_enforced_by_its_controller() {
        for id in crate::ALGORITHMS {
            for p in declared_parameters(id).unwrap() {
                let build = |value: f64| crate::new_controller(id, &config(&[(p.name, value)]));
                // The range's ends are accepted (a controller may still refuse a combination
                // of values, e.g. ARB's thresholds, but not the value's own range).
                for value in [p.minimum, p.maximum] {
                    if let Err(e) = build(value) {
                        assert!(!e.0.contains("out of range"), "{id}: {e}");
                    }
                }
                let above = build(p.maximum + 1.0).err().unwrap();
                assert!(
                    above.0.starts_with(&format!("params.{}:", p.name)),
                    "{above}"
                );
                if p.integer {
                    let half = build(p.minimum + 0.5).err().unwrap();
                    assert!(half.0.contains("integer"), "{half}");
                }
            }
            let unknown = crate::new_controller(id, &config(&[("no_such_knob", 1.0)]));
            assert!(
                unknown.err().unwrap().0.starts_with("params.no_such_knob:"),
                "{id}"
            );
        }
    }
}
