//! AFL++ target: `lbsim_cli::fuzzing::scenario`.
fn main() {
    afl::fuzz!(|data: &[u8]| lbsim_cli::fuzzing::scenario(data));
}
