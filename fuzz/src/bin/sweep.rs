//! AFL++ target: `lbsim_cli::fuzzing::sweep`.
fn main() {
    afl::fuzz!(|data: &[u8]| lbsim_cli::fuzzing::sweep(data));
}
