//! Progress on stderr (a live bar on a terminal, a plain line every few seconds in a log) and
//! the Ctrl-C / SIGTERM handling of a single run.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lbsim::sim::Progress;

/// Seconds between plain progress lines when stderr is not a terminal (Slurm, nohup logs);
/// `LBSIM_PROGRESS_SECONDS` overrides it (tests use a fraction of a second).
pub fn interval() -> Duration {
    let secs = std::env::var("LBSIM_PROGRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(5.0);
    Duration::from_secs_f64(secs)
}

fn secs(d: f64) -> String {
    if !d.is_finite() {
        return "?".into();
    }
    let s = d.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// Time left if the rest goes as fast as what is done.
fn eta(elapsed: f64, done: u64, total: u64) -> String {
    if done == 0 {
        "?".into()
    } else {
        secs(elapsed * (total - done.min(total)) as f64 / done as f64)
    }
}

/// The signal that asked the run to stop (0: none). A second signal ends the process at once.
pub struct Stop {
    signal: Arc<AtomicUsize>,
}

impl Stop {
    /// Catches SIGINT and SIGTERM: the first sets the flag, the second exits (130 or 143).
    pub fn install() -> Result<Stop> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let signal = Arc::new(AtomicUsize::new(0));
        let again = Arc::new(AtomicBool::new(false));
        for (sig, code) in [
            (SIGINT, crate::guard::EXIT_SIGINT),
            (SIGTERM, crate::guard::EXIT_SIGTERM),
        ] {
            // Registered first, so on the second signal `again` is already true.
            signal_hook::flag::register_conditional_shutdown(sig, code as i32, again.clone())
                .context("cannot install a signal handler")?;
            signal_hook::flag::register(sig, again.clone())
                .context("cannot install a signal handler")?;
            signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)
                .context("cannot install a signal handler")?;
        }
        Ok(Stop { signal })
    }

    /// The signal received, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::Relaxed) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

/// Shows one run's progress: simulated time, flows done, events/s and ETA.
pub struct RunProgress {
    bar: Option<ProgressBar>,
    plain: bool,
    every: Duration,
    t0: Instant,
    last: Instant,
    last_events: u64,
}

impl RunProgress {
    pub fn new(quiet: bool) -> RunProgress {
        let term = std::io::stderr().is_terminal();
        let bar = (!quiet && term).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} flows, {msg}, ETA {eta}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        });
        let now = Instant::now();
        RunProgress {
            bar,
            plain: !quiet && !term,
            every: interval(),
            t0: now,
            last: now,
            last_events: 0,
        }
    }

    pub fn update(&mut self, p: &Progress) {
        if self.bar.is_none() && !self.plain {
            return;
        }
        let now = Instant::now();
        let since = now.duration_since(self.last);
        if let Some(b) = &self.bar {
            b.set_length(p.flows);
            b.set_position(p.completed);
            if since >= Duration::from_millis(200) {
                let rate = (p.events - self.last_events) as f64 / since.as_secs_f64();
                b.set_message(format!(
                    "simulated {:.2} us, {:.1} M events/s",
                    p.now.ps() as f64 / 1e6,
                    rate / 1e6
                ));
                self.last = now;
                self.last_events = p.events;
            }
        } else if since >= self.every {
            let rate = (p.events - self.last_events) as f64 / since.as_secs_f64();
            let elapsed = now.duration_since(self.t0).as_secs_f64();
            eprintln!(
                "progress: simulated {:.2} us, {}/{} flows done, {:.1} M events/s, {} elapsed, ETA {}",
                p.now.ps() as f64 / 1e6,
                p.completed,
                p.flows,
                rate / 1e6,
                secs(elapsed),
                eta(elapsed, p.completed, p.flows)
            );
            self.last = now;
            self.last_events = p.events;
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// For sweeps when stderr is not a terminal: a line every `interval()` with runs done of
/// `total` and the ETA, from a thread of its own (a single run may take longer than the
/// interval). Stops when `done` reaches `total` or `stop` is set.
pub fn sweep_ticker(done: &AtomicUsize, total: usize, stop: &AtomicBool) {
    let every = interval();
    let t0 = Instant::now();
    let mut next = t0 + every;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50).min(every));
        let now = Instant::now();
        if now < next {
            continue;
        }
        next = now + every;
        let d = done.load(Ordering::Relaxed);
        let elapsed = now.duration_since(t0).as_secs_f64();
        eprintln!(
            "progress: {d}/{total} runs done, {} elapsed, ETA {}",
            secs(elapsed),
            eta(elapsed, d as u64, total as u64)
        );
    }
}

/// Whether sweeps should print plain progress lines (not quiet, stderr not a terminal).
pub fn plain_lines(quiet: bool) -> bool {
    !quiet && !std::io::stderr().is_terminal()
}
