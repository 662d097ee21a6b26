//! AFL++ target: `lbsim_cli::fuzzing::cm`.
fn main() {
    afl::fuzz!(|data: &[u8]| lbsim_cli::fuzzing::cm(data));
}
