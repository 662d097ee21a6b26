//! The report of one run directory (`lbsim run --out`) or of a compare directory (`lbsim
//! compare --out`: one run directory per scheme): the headline figures side by side, CCT over the
//! bound per scheme, FCT CDFs, a timeline of collectives and of each host's transfers for
//! dependent workloads, and, when the run sampled telemetry, what happened inside it
//! (telemetry.rs).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use super::svg::{self, esc, fmt, Axis, Frame};
use super::{by_family, color, family_legend, figure_open, page_head, slug, telemetry};

/// Above this many flows a host timeline draws busy intervals instead of single flows.
const MAX_TIMELINE_FLOWS: usize = 4000;
/// At most this many collectives drawn in a collective timeline.
const MAX_TIMELINE_COLLECTIVES: usize = 400;

pub struct Flow {
    pub src: u32,
    pub start_us: f64,
    pub finish_us: Option<f64>,
}

pub struct Collective {
    pub label: String,
    pub kind: String,
    pub start_us: Option<f64>,
    pub finish_us: Option<f64>,
    pub bound_us: f64,
}

/// One run directory, loaded.
pub struct RunData {
    /// The scheme (compare) or the directory's name.
    pub name: String,
    pub dir: PathBuf,
    pub summary: Value,
    pub flows: Vec<Flow>,
    pub collectives: Vec<Collective>,
    /// `fabric.json`, if the run wrote one.
    pub fabric: Option<Value>,
}

/// The run directories `dir` holds: itself if it is one, else its subdirectories that are (a
/// compare directory), ordered by the schemes' families; None if neither.
pub fn find(dir: &Path) -> Result<Option<Vec<PathBuf>>> {
    if dir.join("summary.json").is_file() {
        return Ok(Some(vec![dir.to_path_buf()]));
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("summary.json").is_file() && !p.join("sweep.json").exists())
        .collect();
    if v.is_empty() {
        return Ok(None);
    }
    v.sort();
    let names: Vec<String> = v.iter().map(|p| dir_name(p)).collect();
    let order = by_family(&names);
    v.sort_by_key(|p| order.iter().position(|n| *n == dir_name(p)));
    Ok(Some(v))
}

fn dir_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into())
}

fn ps_us(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().map(|ps| ps / 1e6)
}

/// Column positions of `names` in a CSV header, naming the file when one is missing.
fn columns(h: &csv::StringRecord, names: &[&str], path: &Path) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            h.iter()
                .position(|c| c == *n)
                .with_context(|| format!("{}: no column `{n}`", path.display()))
        })
        .collect()
}

impl RunData {
    pub fn load(dir: &Path) -> Result<RunData> {
        let sp = dir.join("summary.json");
        let text = std::fs::read_to_string(&sp)
            .with_context(|| format!("cannot read {}", sp.display()))?;
        let summary: Value =
            serde_json::from_str(&text).with_context(|| format!("{}: not JSON", sp.display()))?;
        let name = summary
            .get("scheme")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| dir_name(dir));
        let mut flows = Vec::new();
        let fp = dir.join("flows.csv");
        if fp.is_file() {
            let mut rd = csv::Reader::from_path(&fp)
                .with_context(|| format!("cannot read {}", fp.display()))?;
            let h = rd.headers()?.clone();
            let c = columns(&h, &["src", "start_ps", "finish_ps"], &fp)?;
            for (i, rec) in rd.records().enumerate() {
                let rec = rec.with_context(|| format!("{}: row {}", fp.display(), i + 2))?;
                let get = |k: usize| rec.get(c[k]).unwrap_or("");
                flows.push(Flow {
                    src: get(0).parse().unwrap_or(0),
                    start_us: ps_us(get(1)).unwrap_or(0.0),
                    finish_us: ps_us(get(2)),
                });
            }
        }
        let mut collectives = Vec::new();
        let cp = dir.join("collectives.csv");
        if cp.is_file() {
            let mut rd = csv::Reader::from_path(&cp)
                .with_context(|| format!("cannot read {}", cp.display()))?;
            let h = rd.headers()?.clone();
            let c = columns(
                &h,
                &[
                    "job",
                    "iteration",
                    "layer",
                    "kind",
                    "start_ps",
                    "finish_ps",
                    "bound_ps",
                ],
                &cp,
            )?;
            for (i, rec) in rd.records().enumerate() {
                let rec = rec.with_context(|| format!("{}: row {}", cp.display(), i + 2))?;
                let get = |k: usize| rec.get(c[k]).unwrap_or("");
                let layer = get(2);
                let label = match (get(0), layer.is_empty()) {
                    ("0", true) => format!("it {} {}", get(1), get(3)),
                    ("0", false) => format!("it {} L{} {}", get(1), layer, get(3)),
                    (j, true) => format!("job {j} it {} {}", get(1), get(3)),
                    (j, false) => format!("job {j} it {} L{} {}", get(1), layer, get(3)),
                };
                collectives.push(Collective {
                    label,
                    kind: get(3).to_string(),
                    start_us: ps_us(get(4)),
                    finish_us: ps_us(get(5)),
                    bound_us: ps_us(get(6)).unwrap_or(0.0),
                });
            }
        }
        let fp = dir.join("fabric.json");
        let fabric = match std::fs::read_to_string(&fp) {
            Ok(t) => Some(
                serde_json::from_str(&t).with_context(|| format!("{}: not JSON", fp.display()))?,
            ),
            Err(_) => None,
        };
        Ok(RunData {
            name,
            dir: dir.to_path_buf(),
            summary,
            flows,
            collectives,
            fabric,
        })
    }

    fn num(&self, k: &str) -> Option<f64> {
        self.summary.get(k).and_then(Value::as_f64)
    }

    /// Flows done and in all, when the run did not finish them all.
    fn unfinished(&self) -> Option<(f64, f64)> {
        let (done, all) = (self.num("flows_completed")?, self.num("flows")?);
        (done < all).then_some((done, all))
    }

    /// CCT over the bound, or for an unfinished run its end over the bound (a lower estimate),
    /// and whether the run finished.
    fn cct_ratio(&self) -> Option<(f64, bool)> {
        if let Some(v) = self.num("cct_over_bound") {
            return Some((v, true));
        }
        let (end, lb) = (self.num("end_ps")?, self.num("lower_bound_ps")?);
        (lb > 0.0).then(|| (end / lb, false))
    }

    fn text(&self, k: &str) -> String {
        match self.summary.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(v) => v.to_string(),
        }
    }
}

pub fn render(dir: &Path, dirs: &[PathBuf]) -> Result<String> {
    let runs: Vec<RunData> = dirs
        .iter()
        .map(|d| RunData::load(d))
        .collect::<Result<_>>()?;
    let compare = runs.len() > 1;
    let mut o = String::new();
    let title = if compare {
        "lbsim compare report"
    } else {
        "lbsim run report"
    };
    page_head(&mut o, title);
    let _ = writeln!(o, "<h1>{title}</h1>");
    let first = &runs[0];
    let _ = writeln!(
        o,
        r#"<p id="lbsim-version">lbsim {}; {} on {} ({} hosts, {} flows, seed {}); source: {}</p>"#,
        esc(env!("CARGO_PKG_VERSION")),
        esc(&first.text("workload")),
        esc(&first.text("topology")),
        esc(&first.text("hosts")),
        esc(&first.text("flows")),
        esc(&first.text("seed")),
        esc(&dir.display().to_string())
    );
    unfinished_note(&mut o, &runs);
    summary_table(&mut o, &runs);
    if let Some(f) = &first.fabric {
        fabric_tiers(&mut o, f);
    }
    if compare {
        cct_bars(&mut o, &runs);
    }
    fct_cdf(&mut o, &runs);
    for r in &runs {
        collective_timeline(&mut o, r);
        host_timeline(&mut o, r);
    }
    telemetry::render(&mut o, &runs)?;
    o.push_str(
        "<script>document.documentElement.setAttribute('data-report-ready','1');</script>\n",
    );
    o.push_str("</body></html>\n");
    Ok(o)
}

/// The fabric's tiers, hosts at the bottom: per tier its switches (a box each, up to a row's
/// worth), ports down and up, and the capacity and oversubscription of the links between it
/// and the tier above; scale-up switches beside the hosts.
fn fabric_tiers(o: &mut String, fab: &Value) {
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |x: f64| (x.round() as u64).to_string();
    let pair = |v: &Value, k: &str| {
        let p = v.get(k).and_then(Value::as_array);
        let g = |i: usize| {
            p.and_then(|p| p.get(i))
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        };
        if g(0) == g(1) {
            int(g(0))
        } else {
            format!("{}-{}", int(g(0)), int(g(1)))
        }
    };
    let Some(tiers) = fab.get("tiers").and_then(Value::as_array) else {
        return;
    };
    // Rows from the top: each tier, then the hosts.
    let mut rows: Vec<(String, f64, String)> = tiers
        .iter()
        .rev()
        .map(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("?");
            let (down, up) = (num(t, "down_bps"), num(t, "up_bps"));
            let over = if up > 0.0 {
                format!(
                    ", {}:1 over its uplinks ({} Tb/s)",
                    fmt(down / up),
                    fmt(up / 1e12)
                )
            } else {
                String::new()
            };
            (
                format!("{name}: {} switches", int(num(t, "switches"))),
                num(t, "switches"),
                format!(
                    "{} down, {} up ports each; {} Tb/s down{over}",
                    pair(t, "down"),
                    pair(t, "up"),
                    fmt(down / 1e12)
                ),
            )
        })
        .collect();
    let scale = num(fab, "scale_up_switches");
    let hosts_note = format!(
        "{} Gb/s, {} uplinks each{}",
        fmt(num(fab, "host_gbps")),
        pair(fab, "host_uplinks"),
        if scale > 0.0 {
            format!(
                "; {} scale-up domains over {} NVSwitches ({} links each)",
                int(num(fab, "scale_up_domains")),
                int(scale),
                pair(fab, "scale_up_links")
            )
        } else {
            String::new()
        }
    );
    rows.push((
        format!("hosts: {}", int(num(fab, "hosts"))),
        num(fab, "hosts"),
        hosts_note,
    ));
    const BOXES: f64 = 32.0;
    let (w, row) = (980.0, 64.0);
    let f = Frame::new(w, rows.len() as f64 * row + 24.0);
    let title = format!(
        "The fabric: {}",
        fab.get("label").and_then(Value::as_str).unwrap_or("")
    );
    figure_open(
        o,
        "fabric",
        &title,
        &format!(
            "Tiers from the top, hosts at the bottom; a box per switch or host (up to {BOXES});              bisection {} Tb/s.",
            fmt(num(fab, "bisection_gbps") / 1e3)
        ),
    );
    svg::open(o, &f, &title);
    for (i, (name, count, note)) in rows.iter().enumerate() {
        let y = 12.0 + i as f64 * row;
        let shown = count.min(BOXES);
        let bw = ((w - 360.0) / BOXES).min(24.0);
        for k in 0..shown as usize {
            let _ = write!(
                o,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="#{}" stroke="#333" stroke-width="0.5"/>"##,
                8.0 + k as f64 * (bw + 2.0),
                y,
                bw,
                if i + 1 == rows.len() {
                    "cfe3f7"
                } else {
                    "e8e8e8"
                }
            );
        }
        if *count > BOXES {
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{:.1}">... {}</text>"#,
                12.0 + BOXES * (bw + 2.0),
                y + 11.0,
                int(*count)
            );
        }
        let _ = write!(
            o,
            r#"<text x="8" y="{:.1}" font-weight="bold">{}</text><text x="200" y="{:.1}">{}</text>"#,
            y + 30.0,
            esc(name),
            y + 30.0,
            esc(note)
        );
        if i + 1 < rows.len() {
            let _ = write!(
                o,
                r##"<line x1="20" y1="{:.1}" x2="20" y2="{:.1}" stroke="#999"/>"##,
                y + 36.0,
                y + row
            );
        }
    }
    o.push_str("</svg></figure>\n");
}

/// Runs that did not finish have no CCT: say which, how far they got, and what stands in.
fn unfinished_note(o: &mut String, runs: &[RunData]) {
    let left: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let (done, all) = r.unfinished()?;
            let end = r
                .num("end_ps")
                .map_or(String::new(), |e| format!(" by {:.3} us", e / 1e6));
            Some(format!("{}: {done:.0} of {all:.0} flows{end}", r.name))
        })
        .collect();
    if left.is_empty() {
        return;
    }
    let head = if runs.len() == 1 {
        "The run did not finish".to_string()
    } else {
        format!("{} of {} runs did not finish", left.len(), runs.len())
    };
    let _ = writeln!(
        o,
        "<p><b>{head}</b> ({}): no CCT; CCT / bound reads at least the end over the bound (a lower estimate), drawn hollow.</p>",
        esc(&left.join("; "))
    );
}

fn summary_table(o: &mut String, runs: &[RunData]) {
    let rows: [(&str, &str, f64); 15] = [
        ("cct_ps", "CCT (us)", 1e6),
        ("lower_bound_ps", "lower bound (us)", 1e6),
        ("cct_over_bound", "CCT / bound", 1.0),
        ("flows_completed", "flows done", 1.0),
        ("mean_fct_ps", "mean FCT (us)", 1e6),
        ("p99_fct_ps", "p99 FCT (us)", 1e6),
        ("packets_dropped", "drops", 1.0),
        ("ecn_marks", "ECN marks", 1.0),
        ("packets_trimmed", "trimmed", 1.0),
        ("retransmissions", "retransmissions", 1.0),
        ("timeouts", "timeouts", 1.0),
        ("max_queue_bytes", "max switch queue (B)", 1.0),
        ("mean_queue_bytes", "mean switch queue (B)", 1.0),
        ("events", "events", 1.0),
        ("wall_seconds", "wall (s)", 1.0),
    ];
    o.push_str("<section id=\"run-summary\"><h2>Summary</h2><table><tr><th></th>");
    for r in runs {
        let _ = write!(
            o,
            "<th><span style=\"color:{}\">&#9632;</span> {}</th>",
            color(&r.name, &[]),
            esc(&r.name)
        );
    }
    o.push_str("</tr>\n");
    for (k, label, div) in rows {
        let _ = write!(o, "<tr><th style=\"text-align:left\">{label}</th>");
        for r in runs {
            let cell = match r.num(k) {
                Some(v) if k == "cct_over_bound" => format!("{v:.4}"),
                Some(v) if div != 1.0 => format!("{:.3}", v / div),
                Some(v) if k == "wall_seconds" => format!("{v:.2}"),
                Some(v) if v.fract() != 0.0 => format!("{v:.1}"),
                Some(v) => format!("{v:.0}"),
                // Null: no flow (or not every flow) finished, so there is no such figure.
                None if r.summary.get(k).is_some_and(Value::is_null) => match k {
                    "cct_over_bound" => match r.cct_ratio() {
                        Some((v, false)) => format!("at least {v:.3} (end / bound)"),
                        _ => "unfinished".into(),
                    },
                    "mean_fct_ps" | "p99_fct_ps" => "no flow finished".into(),
                    _ => "unfinished".into(),
                },
                None => r.text(k),
            };
            let _ = write!(o, "<td>{}</td>", esc(&cell));
        }
        o.push_str("</tr>\n");
    }
    let _ = writeln!(
        o,
        "<tr><th style=\"text-align:left\">stack</th>{}</tr></table></section>",
        runs.iter()
            .map(|r| format!(
                "<td>{} / {}</td>",
                esc(&r.text("cc")),
                esc(&r.text("loss_recovery"))
            ))
            .collect::<String>()
    );
}

fn cct_bars(o: &mut String, runs: &[RunData]) {
    let bars: Vec<(String, f64, bool)> = runs
        .iter()
        .filter_map(|r| r.cct_ratio().map(|(v, done)| (r.name.clone(), v, done)))
        .collect();
    if bars.is_empty() {
        return;
    }
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let bw = 22.0;
    let mut f = Frame::new((bars.len() as f64 * bw + 300.0).max(480.0), 320.0);
    f.bottom = 16.0;
    let y = Axis::linear(bars.iter().map(|b| b.1).chain([1.0]), true);
    let title = "CCT over bound per scheme";
    figure_open(
        o,
        "fig-run-cct",
        title,
        "Lower is better; the dashed line is the lower bound (1); schemes coloured by family; hollow: unfinished, drawn at the end over the bound (a lower estimate).",
    );
    svg::open(o, &f, title);
    svg::y_axis(o, &f, &y, "CCT / lower bound");
    for (i, (n, v, done)) in bars.iter().enumerate() {
        let x = f.x0() + 10.0 + i as f64 * bw;
        let ym = y.map(*v, f.y0(), f.y1());
        let c = color(n, &names);
        let (fill, note) = if *done {
            (c.as_str(), "")
        } else {
            ("white", " (unfinished: end over bound, a lower estimate)")
        };
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="{ym:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{c}"><title>{}: {}{note}</title></rect>"#,
            bw - 3.0,
            (f.y0() - ym).max(0.0),
            esc(n),
            fmt(*v)
        );
    }
    let py1 = y.map(1.0, f.y0(), f.y1());
    let _ = write!(
        o,
        r##"<line x1="{}" x2="{}" y1="{py1:.1}" y2="{py1:.1}" stroke="#000" stroke-dasharray="4 3"/>"##,
        f.x0(),
        f.x1()
    );
    family_legend(o, &f, &names, &|s| s.to_string());
    o.push_str("</svg></figure>\n");
}

fn fct_cdf(o: &mut String, runs: &[RunData]) {
    let curves: Vec<(String, Vec<f64>)> = runs
        .iter()
        .filter_map(|r| {
            let mut v: Vec<f64> = r
                .flows
                .iter()
                .filter_map(|f| f.finish_us.map(|e| e - f.start_us))
                .collect();
            v.sort_by(f64::total_cmp);
            (!v.is_empty()).then(|| (r.name.clone(), v))
        })
        .collect();
    if curves.is_empty() {
        return;
    }
    let names: Vec<String> = curves.iter().map(|c| c.0.clone()).collect();
    let f = Frame::new(640.0, 300.0);
    let x = Axis::linear(curves.iter().flat_map(|c| c.1.iter().copied()), true);
    let y = Axis {
        lo: 0.0,
        hi: 1.0,
        log: false,
    };
    let title = "FCT CDF (finished flows)";
    figure_open(
        o,
        "fig-run-fct",
        title,
        "The fraction of flows finished within each completion time: further left and steeper is better; the right tail is what holds a collective back.",
    );
    svg::open(o, &f, title);
    svg::y_axis(o, &f, &y, "fraction of flows");
    svg::x_axis(o, &f, &x, "flow completion time (us)");
    for (n, v) in &curves {
        let k = v.len();
        let step = k.div_ceil(300).max(1);
        let mut pts = vec![format!("{:.1},{:.1}", x.map(v[0], f.x0(), f.x1()), f.y0())];
        for i in (0..k).step_by(step).chain([k - 1]) {
            pts.push(format!(
                "{:.1},{:.1}",
                x.map(v[i], f.x0(), f.x1()),
                y.map((i + 1) as f64 / k as f64, f.y0(), f.y1())
            ));
        }
        let _ = write!(
            o,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"><title>{}</title></polyline>"#,
            color(n, &names),
            pts.join(" "),
            esc(n)
        );
    }
    family_legend(o, &f, &names, &|s| s.to_string());
    o.push_str("</svg></figure>\n");
}

/// Collectives as bars over time (start to finish), a tick where the bound would end each.
fn collective_timeline(o: &mut String, r: &RunData) {
    let cs: Vec<&Collective> = r
        .collectives
        .iter()
        .filter(|c| c.start_us.is_some())
        .take(MAX_TIMELINE_COLLECTIVES)
        .collect();
    if cs.len() < 2 {
        return;
    }
    let kinds: Vec<String> = {
        let mut k: Vec<String> = Vec::new();
        for c in &cs {
            if !k.contains(&c.kind) {
                k.push(c.kind.clone());
            }
        }
        k
    };
    let row = if cs.len() <= 40 {
        14.0
    } else {
        (560.0 / cs.len() as f64).max(1.5)
    };
    let mut f = Frame::new(980.0, cs.len() as f64 * row + 80.0);
    f.left = if cs.len() <= 40 { 180.0 } else { 64.0 };
    let end = cs
        .iter()
        .filter_map(|c| c.finish_us.or(c.start_us))
        .fold(0.0, f64::max);
    let x = Axis::linear([0.0, end].into_iter(), true);
    let title = format!("Collectives over time ({})", r.name);
    figure_open(
        o,
        &format!("fig-run-timeline-{}", slug(&r.name)),
        &title,
        &format!(
            "Each bar is one collective from its first flow's start to its last flow's receipt; the black tick marks where it would end at its lower bound, so the gap to the tick is what load balancing costs.{}",
            if r.collectives.len() > cs.len() {
                format!(" The first {} of {} shown.", cs.len(), r.collectives.len())
            } else {
                String::new()
            }
        ),
    );
    svg::open(o, &f, &title);
    svg::x_axis(o, &f, &x, "time (us)");
    for (i, c) in cs.iter().enumerate() {
        let y0 = f.y1() + i as f64 * row;
        let s = c.start_us.unwrap_or(0.0);
        let (x0, x1) = (
            x.map(s, f.x0(), f.x1()),
            x.map(c.finish_us.unwrap_or(end), f.x0(), f.x1()),
        );
        let ki = kinds.iter().position(|k| *k == c.kind).unwrap_or(0);
        let _ = write!(
            o,
            r#"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {} to {} us (bound {} us)</title></rect>"#,
            (x1 - x0).max(0.5),
            (row * 0.8).max(1.0),
            svg::PALETTE[ki % svg::PALETTE.len()],
            esc(&c.label),
            fmt(s),
            c.finish_us.map_or("unfinished".into(), fmt),
            fmt(c.bound_us)
        );
        let xb = x.map(s + c.bound_us, f.x0(), f.x1());
        let _ = write!(
            o,
            r##"<line x1="{xb:.1}" x2="{xb:.1}" y1="{y0:.1}" y2="{:.1}" stroke="#000"/>"##,
            y0 + (row * 0.8).max(1.0)
        );
        if row >= 14.0 {
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                f.x0() - 4.0,
                y0 + 10.0,
                esc(&c.label)
            );
        }
    }
    let items: Vec<(String, String)> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| (svg::PALETTE[i % svg::PALETTE.len()].to_string(), k.clone()))
        .collect();
    svg::legend(o, &f, &items);
    o.push_str("</svg></figure>\n");
}

/// Each host's transfers as bars over time (one row per sending host), for workloads whose
/// flows start at different times (collective steps, traces).
fn host_timeline(o: &mut String, r: &RunData) {
    if !r.flows.iter().any(|f| f.start_us > 0.0) {
        return;
    }
    let hosts = r.flows.iter().map(|f| f.src).max().unwrap_or(0) + 1;
    let end = r
        .flows
        .iter()
        .map(|f| f.finish_us.unwrap_or(f.start_us))
        .fold(0.0, f64::max);
    let row = (600.0 / hosts as f64).clamp(2.0, 12.0);
    let f = Frame::new(980.0, hosts as f64 * row + 80.0);
    let x = Axis::linear([0.0, end].into_iter(), true);
    // Per host, its flows by start; with many flows, runs of flows closer than a pixel merge
    // into one bar of activity, so the figure stays small and covers the whole run.
    let merge = r.flows.len() > MAX_TIMELINE_FLOWS;
    let px_us = (x.hi - x.lo) / (f.x1() - f.x0());
    let mut per_host: Vec<Vec<(f64, f64)>> = vec![Vec::new(); hosts as usize];
    for fw in &r.flows {
        per_host[fw.src as usize].push((fw.start_us, fw.finish_us.unwrap_or(end)));
    }
    for v in &mut per_host {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        if merge {
            let mut m: Vec<(f64, f64)> = Vec::new();
            for &(s, e) in v.iter() {
                match m.last_mut() {
                    Some(last) if s <= last.1 + px_us => last.1 = last.1.max(e),
                    _ => m.push((s, e)),
                }
            }
            *v = m;
        }
    }
    let title = format!("Transfers per sending host over time ({})", r.name);
    figure_open(
        o,
        &format!("fig-run-flows-{}", slug(&r.name)),
        &title,
        if merge {
            "One row per sending host; a bar wherever the host has a flow in progress (flows less than a pixel apart merged): the gaps are where a host waits for its peers or for compute."
        } else {
            "One row per sending host, a bar per flow from its start to its receipt, consecutive flows in alternating shades: the steps of each collective, and the gaps where a host waits for its peers or for compute."
        },
    );
    svg::open(o, &f, &title);
    svg::x_axis(o, &f, &x, "time (us)");
    for (h, v) in per_host.iter().enumerate() {
        let y0 = f.y1() + h as f64 * row;
        for (k, &(s, e)) in v.iter().enumerate() {
            let shade = if merge || k % 2 == 0 {
                "#2f7fd0"
            } else {
                "#a3cbf2"
            };
            let (x0, x1) = (x.map(s, f.x0(), f.x1()), x.map(e, f.x0(), f.x1()));
            let _ = write!(
                o,
                r#"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{shade}"/>"#,
                (x1 - x0).max(0.3),
                (row - 0.5).max(1.0),
            );
        }
    }
    let _ = write!(
        o,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">sending host (0 to {})</text>"#,
        (f.y0() + f.y1()) / 2.0,
        hosts - 1
    );
    o.push_str("</svg></figure>\n");
}
