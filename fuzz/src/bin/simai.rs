//! AFL++ target: `lbsim_cli::fuzzing::simai`.
fn main() {
    afl::fuzz!(|data: &[u8]| lbsim_cli::fuzzing::simai(data));
}
