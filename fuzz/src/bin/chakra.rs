//! AFL++ target: `lbsim_cli::fuzzing::chakra`.
fn main() {
    afl::fuzz!(|data: &[u8]| lbsim_cli::fuzzing::chakra(data));
}
