//! Outputs pinned by digest: flows.csv, collectives.csv and summary.json (without its wall-clock
//! fields) of a set of small runs covering every scheme, loss recovery, congestion control,
//! failure kind and workload family. A refactoring must leave every digest as it is; a change
//! that means to alter results regenerates them on purpose with `LBSIM_BLESS=1 cargo test
//! --release -p lbsim-cli --test digests` and says why in its commit. `LBSIM_BIN` runs the
//! cases with another build of the CLI (CI: the profile-guided one).

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use std::process::Command;

const STORE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/digests.txt");

/// The connection matrix of the trace case: two chains joined by a barrier, with a delay.
const CM: &str = "Nodes 16\nConnections 4\nTriggers 2\n\
0->9 id 1 start 0 size 200000 recv_done_trigger 1\n\
4->13 id 2 start 1000000 size 150000 recv_done_trigger 1\n\
9->2 id 3 trigger 1 size 100000 send_done_trigger 2\n\
13->6 id 4 trigger 2 size 50000\n\
trigger id 1 barrier count 2 delay 2000000\n\
trigger id 2 oneshot\n";

/// (name, --set overrides) of every pinned run; `failures.0.*` keys go into a scenario file
/// (one `[[failures]]` entry) that the run reads.
fn cases() -> Vec<(String, Vec<String>)> {
    let k4 = ["topology.k=4"];
    let mut v: Vec<(String, Vec<String>)> = Vec::new();
    let owned = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    // Every scheme on a small all-to-all (the idealized transport).
    for s in lbsim::lb::scheme_names() {
        let mut sets = owned(&k4);
        sets.extend(owned(&[
            "workload.kind=all_to_all",
            "workload.message_bytes=32768",
        ]));
        sets.push(format!("load_balancing.scheme={s}"));
        v.push((format!("a2a-{s}"), sets));
    }
    let perm = |extra: &[&'static str]| {
        let mut sets = vec![
            "topology.k=4",
            "workload.message_bytes=1048576",
            "topology.buffer_bytes=100000",
        ];
        sets.extend_from_slice(extra);
        sets
    };
    // Every loss recovery and congestion control, on a permutation with small buffers.
    for (name, extra) in [
        (
            "lr-erasure",
            &[
                "load_balancing.scheme=host_spray",
                "transport.loss_recovery=erasure",
            ][..],
        ),
        (
            "lr-sack",
            &["load_balancing.scheme=reps", "transport.loss_recovery=sack"],
        ),
        (
            "lr-gbn",
            &[
                "load_balancing.scheme=ecmp",
                "transport.loss_recovery=go_back_n",
            ],
        ),
        (
            "lr-trim",
            &[
                "load_balancing.scheme=host_spray",
                "transport.loss_recovery=trim",
            ],
        ),
        (
            "cc-dctcp",
            &[
                "load_balancing.scheme=plb",
                "transport.cc=dctcp",
                "transport.loss_recovery=sack",
            ],
        ),
        (
            "cc-dcqcn",
            &[
                "load_balancing.scheme=ecmp",
                "transport.cc=dcqcn",
                "transport.loss_recovery=go_back_n",
                "topology.ecn_kmax_bytes=80000",
                "topology.ecn_pmax=0.2",
            ],
        ),
        (
            "cc-swift",
            &[
                "load_balancing.scheme=switch_ar",
                "transport.cc=swift",
                "transport.loss_recovery=sack",
            ],
        ),
        (
            "cc-mswift",
            &[
                "load_balancing.scheme=ofan",
                "transport.cc=mswift",
                "transport.loss_recovery=sack",
            ],
        ),
        (
            "cc-nscc",
            &[
                "load_balancing.scheme=reps",
                "transport.cc=nscc",
                "transport.loss_recovery=trim",
            ],
        ),
        (
            "cc-eqds",
            &[
                "load_balancing.scheme=host_spray",
                "transport.cc=eqds",
                "transport.loss_recovery=trim",
            ],
        ),
    ] {
        v.push((name.to_string(), owned(&perm(extra))));
    }
    // Failures: a dead link with convergence, degraded links with failure-aware rates, bursty loss.
    v.push((
        "fail-down-converge".into(),
        owned(&[
            "topology.k=4",
            "workload.kind=all_to_all",
            "workload.message_bytes=65536",
            "load_balancing.scheme=ofan",
            "failure.convergence_us=5",
            "failures.0.kind=\"down\"",
            "failures.0.link=\"agg:0-core:0\"",
            "failures.0.at_us=2",
            "failures.0.recover_at_us=40",
        ]),
    ));
    v.push((
        "fail-degraded-aware".into(),
        owned(&[
            "topology.k=4",
            "workload.message_bytes=524288",
            "load_balancing.scheme=host_spray",
            "transport.failure_aware_rate=true",
            "failure.convergence_us=0",
            "failures.0.kind=\"degraded\"",
            "failures.0.rate_fraction=0.25",
            "failures.0.link=\"tor:0-agg:0\"",
        ]),
    ));
    v.push((
        "fail-flaky-sack".into(),
        owned(&[
            "topology.k=4",
            "workload.message_bytes=262144",
            "load_balancing.scheme=reps",
            "transport.loss_recovery=sack",
            "failures.0.kind=\"flaky\"",
            "failures.0.random_fraction=0.2",
            "failures.0.loss_good=0.001",
            "failures.0.loss_bad=0.3",
            "failures.0.p_good_to_bad=0.01",
            "failures.0.p_bad_to_good=0.2",
        ]),
    ));
    // Collectives and dependent workloads.
    for (name, extra) in [
        (
            "coll-ring",
            &[
                "workload.kind=ring_allreduce",
                "workload.message_bytes=1048576",
                "load_balancing.scheme=switch_rr",
            ][..],
        ),
        (
            "coll-hd",
            &[
                "workload.kind=halving_doubling_allreduce",
                "workload.message_bytes=1048576",
                "load_balancing.scheme=host_dr",
            ],
        ),
        (
            "coll-pairwise",
            &[
                "workload.kind=all_to_all",
                "workload.all_to_all_algorithm=pairwise",
                "workload.message_bytes=16384",
                "workload.placement=random",
                "load_balancing.scheme=switch_jsq",
            ],
        ),
        (
            "coll-a2a-limited",
            &[
                "workload.kind=all_to_all",
                "workload.all_to_all_algorithm=limited",
                "workload.all_to_all_concurrency=3",
                "workload.message_bytes=16384",
                "load_balancing.scheme=reps",
            ],
        ),
        (
            "coll-fsdp",
            &[
                "workload.kind=fsdp",
                "workload.layers=2",
                "workload.layer_bytes=262144",
                "workload.compute_us_per_layer=3",
                "workload.gpus_per_host=2",
                "load_balancing.scheme=ecmp",
            ],
        ),
    ] {
        let mut sets = owned(&k4);
        sets.extend(owned(extra));
        v.push((name.to_string(), sets));
    }
    // GPU servers: NVLink and NIC traffic at once on each GPU.
    for (name, extra) in [
        (
            "ai-hierarchical",
            &[
                "topology.kind=ai",
                "topology.servers=4",
                "topology.leaf_servers=2",
                "topology.server.gpus=4",
                "workload.kind=hierarchical_allreduce",
                "workload.message_bytes=1048576",
                "load_balancing.scheme=host_spray",
            ][..],
        ),
        (
            "ai-ring-channels",
            &[
                "topology.kind=ai",
                "topology.servers=4",
                "topology.leaf_servers=2",
                "topology.server.gpus=4",
                "workload.kind=ring_allreduce",
                "workload.channels=4",
                "workload.message_bytes=1048576",
                "load_balancing.scheme=ecmp",
            ],
        ),
    ] {
        v.push((name.to_string(), owned(extra)));
    }
    v
}

/// FNV-1a, 64 bits: stable across platforms and toolchains, unlike std's hasher.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn digest_dir(dir: &Path) -> String {
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_default();
    let mut summary: serde_json::Value =
        serde_json::from_slice(&read("summary.json")).expect("summary.json parses");
    let obj = summary.as_object_mut().unwrap();
    obj.remove("wall_seconds");
    obj.remove("events_per_second");
    let summary = serde_json::to_vec(&summary).unwrap();
    format!(
        "flows={:016x} collectives={:016x} summary={:016x}",
        fnv(&read("flows.csv")),
        fnv(&read("collectives.csv")),
        fnv(&summary)
    )
}

/// A fresh directory named after the test's thread.
fn tmpdir() -> TempDir {
    TempDir::new("digests", &format!("{:?}", std::thread::current().id()))
}

/// The binary under test: this build's, or `LBSIM_BIN` (CI checks the profile-guided build of
/// `scripts/pgo-build.sh` against the same pinned digests).
fn lbsim_bin() -> PathBuf {
    std::env::var_os("LBSIM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_lbsim")))
}

/// Runs a case on `threads` threads; returns its digest and what stderr said of the threads.
fn run(dir: &Path, name: &str, sets: &[String], threads: u32) -> (String, String) {
    let out = dir.join(format!("{name}-{threads}"));
    let mut c = Command::new(lbsim_bin());
    c.arg("run").arg("--quiet").arg("--out").arg(&out);
    c.arg("--threads").arg(threads.to_string());
    let (failure, sets): (Vec<&String>, Vec<&String>) =
        sets.iter().partition(|s| s.starts_with("failures.0."));
    if !failure.is_empty() {
        let toml: String = failure
            .iter()
            .map(|s| s.trim_start_matches("failures.0.").to_string() + "\n")
            .collect();
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, format!("[[failures]]\n{toml}")).unwrap();
        c.arg(&path);
    }
    for s in sets {
        c.arg("--set").arg(s);
    }
    let o = c.output().expect("lbsim runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() || o.status.code() == Some(3),
        "{name}: {err}"
    );
    let threads = err
        .lines()
        .find(|l| l.starts_with("threads: "))
        .unwrap_or("")
        .to_string();
    (digest_dir(&out), threads)
}

/// The trace case, whose barrier trigger counts completions at hosts 9 and 13.
fn all_cases(dir: &Path) -> Vec<(String, Vec<String>)> {
    let cm = dir.join("trace.cm");
    std::fs::write(&cm, CM).unwrap();
    let mut cases = cases();
    cases.push((
        "trace-cm".into(),
        vec![
            "topology.k=4".into(),
            "workload.kind=connection_matrix".into(),
            format!("workload.path=\"{}\"", cm.display()),
            "load_balancing.scheme=switch_random".into(),
        ],
    ));
    cases
}

/// Cases that stay on one thread, and why: a trigger with no delay links completions and
/// starts in different partitions (a pairwise round, or a limited all-to-all's next message,
/// waits for a send's receipt at the peer; FSDP's next gather waits for the whole previous
/// one; the trace's second trigger starts a flow at another pod's host on send completion);
/// failure-aware rates follow which flows are sending, which one world sees. The two GPU
/// cases partition, but into their two units (a server's GPUs span a unit's rail leaves,
/// kept whole with their NVLink), fewer than the thread counts asked.
const SINGLE: &[&str] = &[
    "coll-pairwise",
    "coll-a2a-limited",
    "coll-fsdp",
    "trace-cm",
    "fail-degraded-aware",
    "ai-hierarchical",
    "ai-ring-channels",
];

/// Every pinned case on 3 threads (k = 4: pods 0-1, 2 and 3, cores dealt round-robin) gives
/// the bytes it gives on one; all but those in `SINGLE` really run partitioned.
#[test]
fn outputs_do_not_depend_on_the_thread_count() {
    let tmp = tmpdir();
    let dir = tmp.join("threads");
    std::fs::create_dir_all(&dir).unwrap();
    let mut diff = Vec::new();
    for (name, sets) in all_cases(&dir) {
        let (one, _) = run(&dir, &name, &sets, 1);
        let (three, how) = run(&dir, &name, &sets, 3);
        if one != three {
            diff.push(format!(
                "  {name}: 1 thread {one}\n  {name}: 3 threads {three}"
            ));
        }
        let single = SINGLE.contains(&name.as_str());
        if how.contains("3 partitions") == single {
            diff.push(format!("  {name}: {how}"));
        }
    }
    assert!(diff.is_empty(), "outputs differ:\n{}", diff.join("\n"));
}

/// At 2, 4 and 8 threads every case gives the stored one-thread digest (the test above ties the
/// stored digests to one thread); k = 4 has four pods, so 8 threads make four partitions.
#[test]
fn outputs_at_2_4_and_8_threads_match_the_stored_digests() {
    let tmp = tmpdir();
    let dir = tmp.join("more-threads");
    std::fs::create_dir_all(&dir).unwrap();
    let stored =
        std::fs::read_to_string(STORE).expect("tests/digests.txt (LBSIM_BLESS=1 writes it)");
    let mut diff = Vec::new();
    for (name, sets) in all_cases(&dir) {
        let want = stored
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} has no stored digest"))
            .to_string();
        let single = SINGLE.contains(&name.as_str());
        for n in [2u32, 4, 8] {
            let (got, how) = run(&dir, &name, &sets, n);
            if got != want {
                diff.push(format!("  {name}: {n} threads {got}, stored {want}"));
            }
            // A case in `SINGLE` may partition at some counts (trace-cm's chain stays inside
            // one half at 2 threads); every other case must.
            let parts = format!("{} partitions", n.min(4));
            if !single && !how.contains(&parts) {
                diff.push(format!("  {name} at {n} threads: {how}"));
            }
        }
    }
    assert!(diff.is_empty(), "outputs differ:\n{}", diff.join("\n"));
}

#[test]
fn outputs_match_their_stored_digests() {
    let dir = tmpdir();
    let got: Vec<String> = all_cases(&dir)
        .iter()
        .map(|(name, sets)| format!("{name} {}", run(&dir, name, sets, 1).0))
        .collect();
    let text = got.join("\n") + "\n";
    if std::env::var_os("LBSIM_BLESS").is_some() {
        std::fs::write(STORE, &text).unwrap();
        return;
    }
    let stored =
        std::fs::read_to_string(STORE).expect("tests/digests.txt (LBSIM_BLESS=1 writes it)");
    let stored: Vec<&str> = stored.lines().collect();
    let mut diff = Vec::new();
    for (i, g) in got.iter().enumerate() {
        if stored.get(i) != Some(&g.as_str()) {
            diff.push(format!(
                "  now:    {g}\n  stored: {}",
                stored.get(i).unwrap_or(&"-")
            ));
        }
    }
    assert!(
        diff.is_empty() && stored.len() == got.len(),
        "outputs changed ({} of {} cases):\n{}",
        diff.len(),
        got.len(),
        diff.join("\n")
    );
}
