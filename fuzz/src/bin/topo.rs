//! AFL++ target: `lbsim_cli::fuzzing::topo`.
fn main() {
    afl::fuzz!(|data: &[u8]| lbsim_cli::fuzzing::topo(data));
}
