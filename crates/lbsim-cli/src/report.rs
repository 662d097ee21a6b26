//! `lbsim report DIR -o report.html`: one self-contained HTML page (inline SVG, no network) of
//! one sweep directory or a directory of them (`lbsim paper`). Per sweep: CCT over the bound per
//! scheme (mean, whiskers min/max over seeds) for each workload; FCT CDFs; a log-log plot of the
//! mean queue against message size with fitted slopes when the grid varies the message size;
//! lines of CCT over a failure key (G, failure rate) when the grid varies one; the raw figures;
//! the scenario and the lbsim version. Every figure has a stable element id (`fig-...`).

mod parquet;
mod run;
mod svg;
mod telemetry;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use lbsim::experiments::fit_loglog_slope;
use lbsim::lb::Family;
use lbsim::ScenarioFile;

use crate::output::write_atomic;
use crate::sweep::{self, Manifest, RunRecord};
use svg::{esc, fmt, Axis, Frame, LinePoint, Series};

#[derive(clap::Args, Clone, Debug)]
pub struct ReportArgs {
    /// A sweep output directory or a directory of them (lbsim paper --out), a run directory
    /// (lbsim run --out) or a compare directory (lbsim compare --out).
    pub dir: PathBuf,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", default_value = "report.html")]
    pub output: PathBuf,
}

pub fn main(a: ReportArgs) -> Result<()> {
    let html = render(&a.dir)?;
    write_atomic(&a.output, html.as_bytes())?;
    println!("wrote {}", a.output.display());
    Ok(())
}

const SCHEME_KEY: &str = "load_balancing.scheme";
const WORKLOAD_KEY: &str = "workload.kind";
const MESSAGE_KEY: &str = "workload.message_bytes";
/// At most this many panels of one kind per sweep and workload (keeps big grids readable).
const MAX_PANELS: usize = 6;

/// One sweep directory, loaded.
pub struct SweepData {
    pub name: String,
    pub m: Manifest,
    pub runs: Vec<RunRecord>,
    pub missing: Vec<String>,
    dir: PathBuf,
}

impl SweepData {
    pub fn load(dir: &Path) -> Result<SweepData> {
        let m = sweep::read_manifest(dir)?;
        let (runs, missing) = sweep::read_runs(dir, &m)?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "sweep".into());
        Ok(SweepData {
            name,
            m,
            runs,
            missing,
            dir: dir.to_path_buf(),
        })
    }

    pub fn key(&self, k: &str) -> Option<usize> {
        self.m.keys.iter().position(|x| x == k)
    }

    pub fn value<'a>(&'a self, r: &RunRecord, key: usize) -> &'a str {
        &self.m.points[r.point].values[key]
    }

    /// Distinct values of a grid key in grid order.
    pub fn values_of(&self, key: usize) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for p in &self.m.points {
            if !v.contains(&p.values[key]) {
                v.push(p.values[key].clone());
            }
        }
        v
    }

    fn flows_fct_us(&self, r: &RunRecord) -> Vec<f64> {
        let p = sweep::run_dir(&self.dir, &self.m.points[r.point].id, r.seed).join("flows.csv");
        let Ok(mut rd) = csv::Reader::from_path(&p) else {
            return Vec::new();
        };
        let Ok(h) = rd.headers() else {
            return Vec::new();
        };
        let Some(col) = h.iter().position(|c| c == "fct_ps") else {
            return Vec::new();
        };
        rd.records()
            .filter_map(|rec| rec.ok()?.get(col)?.parse::<f64>().ok())
            .map(|ps| ps / 1e6)
            .collect()
    }
}

pub fn text(r: &RunRecord, field: &str) -> String {
    r.summary
        .get(field)
        .map(sweep::json_cell)
        .unwrap_or_default()
}

pub fn num(r: &RunRecord, field: &str) -> Option<f64> {
    r.summary.get(field).and_then(Value::as_f64)
}

/// CCT over the bound, or for an unfinished run its end over the bound (a lower estimate).
pub fn cct_ratio(r: &RunRecord) -> Option<(f64, bool)> {
    if let Some(v) = num(r, "cct_over_bound") {
        return Some((v, true));
    }
    let (end, lb) = (num(r, "end_ps")?, num(r, "lower_bound_ps")?);
    (lb > 0.0).then(|| (end / lb, false))
}

/// Mean, min, max of values.
pub fn stats(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    Some((mean, lo, hi))
}

pub fn slug(s: &str) -> String {
    let mut o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while o.contains("--") {
        o = o.replace("--", "-");
    }
    o.trim_matches('-').to_string()
}

/// Shades per family (darkest first): a family shares a hue, so the study's groups read at a
/// glance; a scheme's shade is its rank among the registry's schemes of its family.
const FAMILY_SHADES: [&[&str]; 6] = [
    &["#555555"],
    &["#8c564b", "#c49c94"],
    &["#a6a61c"],
    &["#0b4f9c", "#2f7fd0", "#66a6e6", "#a3cbf2"],
    &["#a63603", "#e6550d", "#fd8d3c", "#fdbe85"],
    &["#1b7a3a", "#6cc46c"],
];

fn family_index(f: Family) -> usize {
    Family::ALL.iter().position(|x| *x == f).unwrap_or(0)
}

pub fn color(scheme: &str, order: &[String]) -> String {
    let Some(info) = lbsim::lb::scheme(scheme) else {
        let i = order.iter().position(|s| s == scheme).unwrap_or(0);
        return svg::PALETTE[i % svg::PALETTE.len()].to_string();
    };
    let shades = FAMILY_SHADES[family_index(info.family)];
    let rank = lbsim::lb::scheme_names()
        .iter()
        .filter(|n| lbsim::lb::scheme(n).map(|i| i.family) == Some(info.family))
        .position(|n| *n == scheme)
        .unwrap_or(0);
    shades[rank % shades.len()].to_string()
}

/// The study's family of a scheme (None for a name the registry does not know).
pub fn family(scheme: &str) -> Option<Family> {
    lbsim::lb::scheme(scheme).map(|i| i.family)
}

/// Schemes ordered by family (flow first, rotation last), keeping their order inside one.
pub fn by_family(schemes: &[String]) -> Vec<String> {
    let mut v = schemes.to_vec();
    v.sort_by_key(|s| family(s).map_or(usize::MAX, family_index));
    v
}

/// A legend of schemes under family headings.
pub fn family_legend(
    o: &mut String,
    f: &Frame,
    schemes: &[String],
    label: &dyn Fn(&str) -> String,
) {
    let mut y = f.y1() + 4.0;
    let mut last: Option<Option<Family>> = None;
    for sc in schemes {
        let fam = family(sc);
        if last != Some(fam) {
            if last.is_some() {
                y += 4.0;
            }
            let _ = write!(
                o,
                r##"<text x="{:.1}" y="{:.1}" font-weight="bold" fill="#444">{}</text>"##,
                f.x1() + 12.0,
                y + 9.0,
                esc(fam.map_or("other", Family::name))
            );
            y += 15.0;
            last = Some(fam);
        }
        let _ = write!(
            o,
            r#"<rect x="{:.1}" y="{y:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            f.x1() + 18.0,
            color(sc, schemes),
            f.x1() + 32.0,
            y + 9.0,
            esc(&label(sc))
        );
        y += 15.0;
    }
}

/// The sweep directories under `dir` (itself, or its subdirectories with a sweep.json, by name).
pub fn sweep_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.join("sweep.json").is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let rd = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("sweep.json").is_file())
        .collect();
    v.sort();
    if v.is_empty() {
        bail!(
            "{}: no results here: no sweep (sweep.json), run or compare directory (summary.json) in it or its subdirectories",
            dir.display()
        );
    }
    Ok(v)
}

pub fn render(dir: &Path) -> Result<String> {
    if dir.join("sweep.json").is_file() {
        return render_sweeps(dir);
    }
    match run::find(dir)? {
        Some(runs) => run::render(dir, &runs),
        None => render_sweeps(dir),
    }
}

/// The report of a sweep directory or a directory of them.
fn render_sweeps(dir: &Path) -> Result<String> {
    let sweeps: Vec<SweepData> = sweep_dirs(dir)?
        .iter()
        .map(|d| SweepData::load(d))
        .collect::<Result<_>>()?;
    let mut o = String::new();
    page_head(&mut o, "lbsim report");
    o.push_str("<h1>lbsim report</h1>\n");
    let versions: Vec<String> = {
        let mut v: Vec<String> = sweeps.iter().map(|s| s.m.lbsim_version.clone()).collect();
        v.dedup();
        v
    };
    let _ = writeln!(
        o,
        r#"<p id="lbsim-version">lbsim {} (results written by lbsim {}); source: {}</p>"#,
        esc(env!("CARGO_PKG_VERSION")),
        esc(&versions.join(", ")),
        esc(&dir.display().to_string())
    );
    let structured = std::fs::read_to_string(dir.join("findings.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<crate::paper::Finding>>(&t).ok());
    match (structured, std::fs::read_to_string(dir.join("findings.md"))) {
        (Some(fs), _) => o.push_str(&findings_html(&fs)),
        (None, Ok(f)) => {
            let _ = writeln!(
                o,
                "<section id=\"findings\"><h2>Findings</h2><pre>{}</pre></section>",
                esc(&f)
            );
        }
        _ => {}
    }
    o.push_str("<nav><ul>");
    for s in &sweeps {
        let _ = write!(
            o,
            "<li><a href=\"#sweep-{}\">{}</a></li>",
            slug(&s.name),
            esc(&s.name)
        );
    }
    o.push_str("</ul></nav>\n");
    for s in &sweeps {
        render_sweep(&mut o, s);
    }
    // Marks the page as fully parsed and scripted without error (the browser test reads it).
    o.push_str(
        "<script>document.documentElement.setAttribute('data-report-ready','1');</script>\n",
    );
    o.push_str("</body></html>\n");
    Ok(o)
}

/// The page's head and style, shared by the sweep and the run reports.
pub fn page_head(o: &mut String, title: &str) {
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(o, "<title>{}</title><style>", esc(title));
    o.push_str("body{font-family:sans-serif;margin:1.5em;max-width:1300px;color:#222}");
    o.push_str("figure{margin:1em 0;display:inline-block;vertical-align:top}");
    o.push_str("figcaption{font-weight:bold;margin-bottom:.3em;max-width:760px}");
    o.push_str(
        ".read{display:block;font-weight:normal;font-size:12px;color:#555;margin-top:.15em}",
    );
    o.push_str("table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}");
    o.push_str(
        "th{background:#f3f3f3}pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:12px;white-space:pre-wrap}",
    );
    o.push_str("table.findings{font-size:13px;max-width:1250px}table.findings td,table.findings th{text-align:left;vertical-align:top}table.findings details{font-size:12px;color:#444}table.findings ul{margin:.2em 0;padding-left:1.2em}");
    o.push_str(".badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:11px;font-weight:bold;color:#fff;white-space:nowrap}.agrees{background:#2e7d32}.disagrees{background:#c62828}.partial{background:#ef8f00}.none{background:#888}");
    o.push_str("section{border-top:2px solid #888;margin-top:2em}</style></head><body>\n");
}

/// The study's findings as a table: claim, the study's figure, lbsim's, a verdict badge, the
/// sweep and a link to the figure; the figures behind each verdict folded below.
pub fn findings_html(fs: &[crate::paper::Finding]) -> String {
    let mut o = String::new();
    o.push_str("<section id=\"findings\"><h2>Findings</h2><table class=\"findings\"><tr><th>#</th><th>claim</th><th>the study</th><th>lbsim</th><th>verdict</th><th>measured by</th></tr>\n");
    for f in fs {
        let class = match f.verdict.split_whitespace().next().unwrap_or("") {
            "AGREES" => "agrees",
            "DISAGREES" => "disagrees",
            "PARTIAL" => "partial",
            _ => "none",
        };
        let at = if f.figure.is_empty() {
            esc(if f.sweep.is_empty() { "-" } else { &f.sweep })
        } else {
            format!("<a href=\"#{}\">{}</a>", esc(&f.figure), esc(&f.sweep))
        };
        let _ = writeln!(
            o,
            "<tr id=\"finding-{}\"><td>{}</td><td>{}<details><summary>figures</summary><ul>{}</ul></details></td><td>{}</td><td>{}</td><td><span class=\"badge {class}\">{}</span></td><td>{at}</td></tr>",
            f.n,
            f.n,
            esc(&f.claim),
            f.details
                .iter()
                .map(|d| format!("<li>{}</li>", esc(d)))
                .collect::<String>(),
            esc(&f.study),
            esc(&f.lbsim),
            esc(&f.verdict),
        );
    }
    o.push_str("</table></section>\n");
    o
}

/// Groups runs by the given grid keys' values (in first-seen order) — the "other" dimensions.
fn partition<'a>(
    s: &'a SweepData,
    runs: &[&'a RunRecord],
    keys: &[usize],
) -> Vec<(String, Vec<&'a RunRecord>)> {
    let mut out: Vec<(String, Vec<&RunRecord>)> = Vec::new();
    // A key that is the same in all these runs tells the groups nothing: left out of the labels
    // (a sweep's axes would otherwise run its bars' labels into each other).
    let keys: Vec<usize> = keys
        .iter()
        .copied()
        .filter(|&k| runs.iter().any(|r| s.value(r, k) != s.value(runs[0], k)))
        .collect();
    for r in runs {
        let label = keys
            .iter()
            .map(|&k| format!("{}={}", short_key(&s.m.keys[k]), s.value(r, k)))
            .collect::<Vec<_>>()
            .join(", ");
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(r),
            None => out.push((label, vec![r])),
        }
    }
    out
}

fn short_key(k: &str) -> &str {
    k.rsplit('.').next().unwrap_or(k)
}

fn first_seen(v: impl Iterator<Item = String>) -> Vec<String> {
    let mut o: Vec<String> = Vec::new();
    for x in v {
        if !o.contains(&x) {
            o.push(x);
        }
    }
    o
}

fn render_sweep(o: &mut String, s: &SweepData) {
    let id = slug(&s.name);
    let _ = writeln!(
        o,
        "<section id=\"sweep-{id}\"><h2>{}</h2><p>{} points x {} seed(s); grid: {}</p>",
        esc(&s.name),
        s.m.points.len(),
        s.m.seeds,
        esc(&grid_text(s))
    );
    if !s.missing.is_empty() {
        let _ = writeln!(
            o,
            "<p><b>{} runs not finished</b> (e.g. {}); figures show the finished ones.</p>",
            s.missing.len(),
            esc(&s.missing[..s.missing.len().min(3)].join(", "))
        );
    }
    let workloads = first_seen(s.runs.iter().map(|r| text(r, "workload")));
    let schemes = first_seen(s.runs.iter().map(|r| text(r, "scheme")));
    let others: Vec<usize> = (0..s.m.keys.len())
        .filter(|&k| s.m.keys[k] != SCHEME_KEY && s.m.keys[k] != WORKLOAD_KEY)
        .collect();
    for w in &workloads {
        let runs: Vec<&RunRecord> = s
            .runs
            .iter()
            .filter(|r| text(r, "workload") == *w)
            .collect();
        cct_bars(o, s, &id, w, &runs, &others, &schemes);
    }
    for w in &workloads {
        let runs: Vec<&RunRecord> = s
            .runs
            .iter()
            .filter(|r| text(r, "workload") == *w)
            .collect();
        for (g, (label, group)) in partition(s, &runs, &others).into_iter().enumerate() {
            if g >= MAX_PANELS {
                break;
            }
            fct_cdf(
                o,
                s,
                &format!("fig-fct-{id}-{}-{g}", slug(w)),
                w,
                &label,
                &group,
                &schemes,
            );
        }
    }
    if let Some(mk) = s.key(MESSAGE_KEY).filter(|&k| s.values_of(k).len() > 1) {
        let rest: Vec<usize> = others.iter().copied().filter(|&k| k != mk).collect();
        for w in &workloads {
            let runs: Vec<&RunRecord> = s
                .runs
                .iter()
                .filter(|r| text(r, "workload") == *w)
                .collect();
            for (g, (label, group)) in partition(s, &runs, &rest).into_iter().enumerate() {
                if g >= MAX_PANELS {
                    break;
                }
                let fid = format!("{id}-{}-{g}", slug(w));
                queue_scaling(o, s, &fid, w, &label, &group, mk, &schemes);
            }
        }
    }
    for &fk in others
        .iter()
        .filter(|&&k| s.m.keys[k].starts_with("failure"))
    {
        if s.values_of(fk).len() < 2 {
            continue;
        }
        let rest: Vec<usize> = others.iter().copied().filter(|&k| k != fk).collect();
        for w in &workloads {
            let runs: Vec<&RunRecord> = s
                .runs
                .iter()
                .filter(|r| text(r, "workload") == *w)
                .collect();
            let fid = format!("fig-failure-{id}-{}-{}", slug(&s.m.keys[fk]), slug(w));
            failure_lines(o, s, &fid, w, &runs, fk, &rest, &schemes);
        }
    }
    raw_table(o, s, &id);
    let scenario =
        s.m.points
            .first()
            .map(|p| p.scenario.as_str())
            .unwrap_or("");
    let _ = writeln!(
        o,
        "<details id=\"scenario-{id}\"><summary>Scenario (first point; the grid varies: {}) from {}, lbsim {}</summary><pre>{}</pre></details></section>",
        esc(&s.m.keys.join(", ")),
        esc(&s.m.sweep_file),
        esc(&s.m.lbsim_version),
        esc(scenario)
    );
}

fn grid_text(s: &SweepData) -> String {
    if s.m.keys.is_empty() {
        return "(none)".into();
    }
    (0..s.m.keys.len())
        .map(|k| format!("{} = [{}]", s.m.keys[k], s.values_of(k).join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Opens a figure: its title, then one line on what to read from it.
pub fn figure_open(o: &mut String, id: &str, title: &str, read: &str) {
    let _ = write!(
        o,
        "<figure id=\"{}\" title=\"{}\"><figcaption>{}<span class=\"read\">{}</span></figcaption>",
        esc(id),
        esc(title),
        esc(title),
        esc(read)
    );
}

fn cct_bars(
    o: &mut String,
    s: &SweepData,
    id: &str,
    w: &str,
    runs: &[&RunRecord],
    others: &[usize],
    schemes: &[String],
) {
    let schemes = by_family(schemes);
    let groups = partition(s, runs, others);
    // (group, scheme, mean, lo, hi, all finished)
    let mut bars: Vec<(usize, String, f64, f64, f64, bool)> = Vec::new();
    for (g, (_, group)) in groups.iter().enumerate() {
        for sc in &schemes {
            let vals: Vec<(f64, bool)> = group
                .iter()
                .filter(|r| text(r, "scheme") == *sc)
                .filter_map(|r| cct_ratio(r))
                .collect();
            let v: Vec<f64> = vals.iter().map(|x| x.0).collect();
            if let Some((m, lo, hi)) = stats(&v) {
                bars.push((g, sc.clone(), m, lo, hi, vals.iter().all(|x| x.1)));
            }
        }
    }
    if bars.is_empty() {
        return;
    }
    // Bars of one family touch; a small gap separates families, a larger one groups.
    let bw = 12.0;
    let fam_gap = 5.0;
    let mut offset = Vec::with_capacity(schemes.len());
    let mut x = 0.0;
    for (i, sc) in schemes.iter().enumerate() {
        if i > 0 && family(sc) != family(&schemes[i - 1]) {
            x += fam_gap;
        }
        offset.push(x);
        x += bw;
    }
    let gw = x + 22.0;
    let labelled = groups.len() > 1 || groups.iter().any(|(l, _)| !l.is_empty());
    let mut f = Frame::new((groups.len() as f64 * gw + 300.0).max(520.0), 400.0);
    f.bottom = if labelled { 44.0 } else { 16.0 };
    let y = Axis::linear(bars.iter().map(|b| b.4).chain(std::iter::once(1.0)), true);
    let title = format!("CCT over bound per scheme, {w} ({})", s.name);
    figure_open(
        o,
        &format!("fig-cct-{id}-{}", slug(w)),
        &title,
        "Lower is better; the dashed line is the lower bound (1). Bars: mean over seeds, whiskers min to max; schemes grouped and coloured by family; hollow: some runs unfinished.",
    );
    svg::open(o, &f, &title);
    svg::y_axis(o, &f, &y, "CCT / lower bound");
    let py1 = y.map(1.0, f.y0(), f.y1());
    let gx = |g: usize| f.x0() + 10.0 + g as f64 * gw;
    for (g, sc, m, lo, hi, done) in &bars {
        let si = schemes.iter().position(|x| x == sc).unwrap_or(0);
        let x = gx(*g) + offset[si];
        let (ym, y0) = (y.map(*m, f.y0(), f.y1()), f.y0());
        let c = color(sc, &schemes);
        let fill = if *done { c.clone() } else { "white".into() };
        let note = if *done {
            ""
        } else {
            " (unfinished runs: end over bound, a lower estimate)"
        };
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="{ym:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{c}"><title>{}: mean {} (min {}, max {}){}</title></rect>"#,
            bw - 1.0,
            (y0 - ym).max(0.0),
            esc(sc),
            fmt(*m),
            fmt(*lo),
            fmt(*hi),
            note
        );
        if hi > lo {
            let cx = x + (bw - 1.0) / 2.0;
            let _ = write!(
                o,
                r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="#000"/>"##,
                y.map(*lo, f.y0(), f.y1()),
                y.map(*hi, f.y0(), f.y1())
            );
        }
    }
    let _ = write!(
        o,
        r##"<line x1="{}" x2="{}" y1="{py1:.1}" y2="{py1:.1}" stroke="#000" stroke-dasharray="4 3"/>"##,
        f.x0(),
        f.x1()
    );
    if labelled {
        for (g, (label, _)) in groups.iter().enumerate() {
            let cx = gx(g) + (gw - 22.0) / 2.0;
            let _ = write!(
                o,
                r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                f.y0() + 16.0,
                esc(label)
            );
        }
    }
    family_legend(o, &f, &schemes, &|sc| sc.to_string());
    o.push_str("</svg></figure>\n");
}

fn fct_cdf(
    o: &mut String,
    s: &SweepData,
    fid: &str,
    w: &str,
    label: &str,
    group: &[&RunRecord],
    schemes: &[String],
) {
    let schemes = &by_family(schemes);
    let mut curves: Vec<(String, Vec<f64>)> = Vec::new();
    for sc in schemes {
        let mut v: Vec<f64> = group
            .iter()
            .filter(|r| text(r, "scheme") == *sc)
            .flat_map(|r| s.flows_fct_us(r))
            .collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        curves.push((sc.clone(), v));
    }
    if curves.is_empty() {
        return;
    }
    let f = Frame::new(620.0, 300.0);
    let x = Axis::linear(curves.iter().flat_map(|c| c.1.iter().copied()), true);
    let y = Axis {
        lo: 0.0,
        hi: 1.0,
        log: false,
    };
    let where_ = if label.is_empty() {
        String::new()
    } else {
        format!(", {label}")
    };
    let title = format!(
        "FCT CDF, {w}{where_} ({}; finished flows, all seeds)",
        s.name
    );
    figure_open(
        o,
        fid,
        &title,
        "The fraction of flows finished by each time: further left and steeper is better; the collective ends with its last flow, so the right tail is what costs.",
    );
    svg::open(o, &f, &title);
    svg::y_axis(o, &f, &y, "fraction of flows");
    svg::x_axis(o, &f, &x, "flow completion time (us)");
    for (sc, v) in &curves {
        // At most ~200 steps per curve: the file stays small for all-to-all's 16k flows.
        let n = v.len();
        let step = n.div_ceil(200).max(1);
        let mut pts = vec![format!("{:.1},{:.1}", x.map(v[0], f.x0(), f.x1()), f.y0())];
        for i in (0..n).step_by(step).chain(std::iter::once(n - 1)) {
            let px = x.map(v[i], f.x0(), f.x1());
            pts.push(format!(
                "{px:.1},{:.1}",
                y.map((i + 1) as f64 / n as f64, f.y0(), f.y1())
            ));
        }
        let _ = write!(
            o,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"><title>{}</title></polyline>"#,
            color(sc, schemes),
            pts.join(" "),
            esc(sc)
        );
    }
    let names: Vec<String> = curves.iter().map(|c| c.0.clone()).collect();
    let label = |sc: &str| {
        let n = curves.iter().find(|c| c.0 == sc).map_or(0, |c| c.1.len());
        format!("{sc} ({n} flows)")
    };
    family_legend(o, &f, &names, &label);
    o.push_str("</svg></figure>\n");
}

/// Wire size of a full data packet and the payload, from a point's scenario.
fn packet_sizes(s: &SweepData, r: &RunRecord) -> (f64, f64) {
    toml::from_str::<ScenarioFile>(&s.m.points[r.point].scenario)
        .map(|f| {
            (
                f.packet.payload_bytes as f64,
                (f.packet.payload_bytes + f.packet.header_bytes) as f64,
            )
        })
        .unwrap_or((4096.0, 4158.0))
}

/// One scheme's queue curve: name, (message packets, mean queue packets), fitted slope.
pub type QueueCurve = (String, Vec<(f64, f64)>, Option<f64>);

/// Per scheme: (message packets, mean queue packets averaged over seeds) and the slope.
pub fn queue_curves(
    s: &SweepData,
    group: &[&RunRecord],
    mk: usize,
    schemes: &[String],
) -> Vec<QueueCurve> {
    let mut out = Vec::new();
    for sc in schemes {
        let mut by_m: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        let mut payload = 4096.0;
        for r in group.iter().filter(|r| text(r, "scheme") == *sc) {
            let Ok(m) = s.value(r, mk).parse::<u64>() else {
                continue;
            };
            let (pl, wire) = packet_sizes(s, r);
            payload = pl;
            if let Some(q) = num(r, "mean_queue_bytes") {
                by_m.entry(m).or_default().push(q / wire);
            }
        }
        if by_m.is_empty() {
            continue;
        }
        let pts: Vec<(f64, f64)> = by_m
            .iter()
            .map(|(m, q)| (*m as f64 / payload, q.iter().sum::<f64>() / q.len() as f64))
            .collect();
        let slope = fit_loglog_slope(&pts);
        out.push((sc.clone(), pts, slope));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn queue_scaling(
    o: &mut String,
    s: &SweepData,
    fid: &str,
    w: &str,
    label: &str,
    group: &[&RunRecord],
    mk: usize,
    schemes: &[String],
) {
    let schemes = &by_family(schemes);
    let curves = queue_curves(s, group, mk, schemes);
    if curves.is_empty() {
        return;
    }
    let f = Frame::new(620.0, 320.0);
    let x = Axis::log(curves.iter().flat_map(|c| c.1.iter().map(|p| p.0)));
    let y = Axis::log(curves.iter().flat_map(|c| c.1.iter().map(|p| p.1)));
    let where_ = if label.is_empty() {
        String::new()
    } else {
        format!(", {label}")
    };
    let title = format!(
        "Mean switch queue vs message size (log-log, fitted slopes), {w}{where_} ({})",
        s.name
    );
    figure_open(
        o,
        &format!("fig-queue-{fid}"),
        &title,
        "On log-log axes a slope is the exponent of queue growth with message length; the study's theory: 1 for plain RR and JSQ, 1/2 for random choice and host spraying, 0 for Host DR and Ofan.",
    );
    svg::open(o, &f, &title);
    svg::y_axis(o, &f, &y, "mean queue (packets)");
    svg::x_axis(o, &f, &x, "message size m (packets)");
    let series: Vec<Series> = curves
        .iter()
        .map(|(sc, pts, slope)| Series {
            name: format!(
                "{sc} slope {}",
                slope.map(|v| format!("{v:.2}")).unwrap_or("-".into())
            ),
            color: color(sc, schemes),
            points: pts.iter().map(|&(m, q)| LinePoint::at(m, q)).collect(),
        })
        .collect();
    svg::lines(o, &f, &y, &series, &|v| x.map(v, f.x0(), f.x1()));
    let names: Vec<String> = curves.iter().map(|c| c.0.clone()).collect();
    let label = |sc: &str| {
        let slope = curves.iter().find(|c| c.0 == sc).and_then(|c| c.2);
        format!(
            "{sc} slope {}",
            slope.map_or("-".into(), |v| format!("{v:.2}"))
        )
    };
    family_legend(o, &f, &names, &label);
    o.push_str("</svg></figure>\n");
    let _ = write!(
        o,
        "<table id=\"table-slopes-{}\"><tr><th>scheme</th><th>slope of log q vs log m</th></tr>",
        esc(fid)
    );
    for (sc, _, slope) in &curves {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(sc),
            slope.map(|v| format!("{v:.3}")).unwrap_or("-".into())
        );
    }
    o.push_str("</table>\n");
}

fn value_label(key: &str, v: &str) -> String {
    if v == sweep::UNSET && key.contains("convergence") {
        "never".into()
    } else {
        v.to_string()
    }
}

#[allow(clippy::too_many_arguments)]
fn failure_lines(
    o: &mut String,
    s: &SweepData,
    fid: &str,
    w: &str,
    runs: &[&RunRecord],
    fk: usize,
    rest: &[usize],
    schemes: &[String],
) {
    let schemes = &by_family(schemes);
    let xs = s.values_of(fk);
    let key = s.m.keys[fk].clone();
    let mut series = Vec::new();
    for (label, group) in partition(s, runs, rest).into_iter().take(MAX_PANELS) {
        for sc in schemes {
            let mut pts = Vec::new();
            for (xi, xv) in xs.iter().enumerate() {
                let vals: Vec<(f64, bool)> = group
                    .iter()
                    .filter(|r| text(r, "scheme") == *sc && s.value(r, fk) == xv)
                    .filter_map(|r| cct_ratio(r))
                    .collect();
                let v: Vec<f64> = vals.iter().map(|x| x.0).collect();
                if let Some((m, lo, hi)) = stats(&v) {
                    pts.push(LinePoint {
                        x: xi as f64,
                        y: m,
                        lo,
                        hi,
                        hollow: !vals.iter().all(|x| x.1),
                    });
                }
            }
            if !pts.is_empty() {
                let name = if label.is_empty() {
                    sc.clone()
                } else {
                    format!("{sc}, {label}")
                };
                series.push(Series {
                    name,
                    color: color(sc, schemes),
                    points: pts,
                });
            }
        }
    }
    if series.is_empty() {
        return;
    }
    let f = Frame::new(620.0, 320.0);
    let y = Axis::linear(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.hi))
            .chain(std::iter::once(1.0)),
        true,
    );
    let title = format!("CCT over bound vs {key}, {w} ({})", s.name);
    figure_open(
        o,
        fid,
        &title,
        "Lower is better; a line per scheme (mean over seeds, whiskers min to max). A scheme that copes with the failure stays flat as the key grows.",
    );
    svg::open(o, &f, &title);
    svg::y_axis(o, &f, &y, "CCT / lower bound");
    let n = xs.len().max(2) as f64;
    let xmap = |i: f64| f.x0() + (i + 0.5) / n * (f.x1() - f.x0());
    for (i, xv) in xs.iter().enumerate() {
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            xmap(i as f64),
            f.y0() + 16.0,
            esc(&value_label(&key, xv))
        );
    }
    svg::x_label(
        o,
        &f,
        &format!("{key} (hollow: unfinished runs, end over bound)"),
    );
    svg::lines(o, &f, &y, &series, &xmap);
    svg::series_legend(o, &f, &series);
    o.push_str("</svg></figure>\n");
}

fn raw_table(o: &mut String, s: &SweepData, id: &str) {
    let cols = [
        ("flows_completed", "done"),
        ("flows", "flows"),
        ("cct_over_bound", "CCT/bound"),
        ("cct_ps", "CCT (us)"),
        ("mean_fct_ps", "mean FCT (us)"),
        ("p99_fct_ps", "p99 FCT (us)"),
        ("packets_dropped", "drops"),
        ("mean_queue_bytes", "mean queue (B)"),
        ("failed_links", "failed links"),
    ];
    let _ = write!(
        o,
        "<details open><summary>Raw figures ({} runs)</summary><table id=\"table-raw-{id}\"><tr><th>point</th>",
        s.runs.len()
    );
    for k in &s.m.keys {
        let _ = write!(o, "<th>{}</th>", esc(k));
    }
    o.push_str("<th>seed</th>");
    for (_, h) in cols {
        let _ = write!(o, "<th>{h}</th>");
    }
    o.push_str("</tr>\n");
    for r in &s.runs {
        let _ = write!(o, "<tr><td>{}</td>", esc(&s.m.points[r.point].id));
        for v in &s.m.points[r.point].values {
            let _ = write!(o, "<td>{}</td>", esc(v));
        }
        let _ = write!(o, "<td>{}</td>", r.seed);
        for (k, _) in cols {
            let cell = match k {
                "cct_ps" | "mean_fct_ps" | "p99_fct_ps" => num(r, k)
                    .map(|v| format!("{:.2}", v / 1e6))
                    .unwrap_or_default(),
                "cct_over_bound" => num(r, k).map(|v| format!("{v:.4}")).unwrap_or_default(),
                "mean_queue_bytes" => num(r, k).map(|v| format!("{v:.0}")).unwrap_or_default(),
                "failed_links" => r
                    .summary
                    .get(k)
                    .and_then(Value::as_array)
                    .map(|a| a.len().to_string())
                    .unwrap_or_default(),
                _ => text(r, k),
            };
            let _ = write!(o, "<td>{}</td>", esc(&cell));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table></details>\n");
}
