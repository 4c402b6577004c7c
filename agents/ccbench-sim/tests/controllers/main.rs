//! Controller tests that need a network: each algorithm of `ccbench-cc` driven by the real
//! transport through the simulator (one test binary, a module per algorithm; the controllers'
//! unit tests without a network are in `ccbench-cc`).

mod support;

mod aaimd;
mod alpha_paced_westwood;
mod arb;
mod bfa;
mod dual;
mod newreno;
mod paced_newreno;
mod paced_westwood;
mod reno;
mod tahoe;
mod tfrc;
mod vegas;
mod westwood;
