//! Replays the committed fuzzing corpora (`fuzz/corpus/TARGET/`, minimized by AFL++) and the
//! inputs that once crashed a parser (`fuzz/regressions/TARGET/`) through the same entry points
//! the harnesses call: none may panic, and none may take long (a hang under the fuzzer's time
//! limit is a defect too). See fuzz/README.md for running the fuzzer itself.

use std::path::Path;
use std::time::{Duration, Instant};

/// Far above any input's time here (milliseconds at most), far below a hang.
const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn every_corpus_input_parses_or_is_refused_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut total = 0;
    for (name, target) in lbsim_cli::fuzzing::TARGETS {
        let mut n = 0;
        for dir in ["corpus", "regressions"] {
            let d = root.join(dir).join(name);
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            files.sort();
            for f in files {
                let data = std::fs::read(&f).unwrap();
                let t0 = Instant::now();
                target(&data);
                let took = t0.elapsed();
                assert!(took < LIMIT, "{}: {took:?}", f.display());
                n += 1;
            }
        }
        assert!(n > 0, "no corpus for the {name} target");
        total += n;
    }
    eprintln!("{total} inputs replayed");
}
