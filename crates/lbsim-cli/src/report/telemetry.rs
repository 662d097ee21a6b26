//! What a run's telemetry shows (DIR/telemetry/, README "Telemetry"): the fabric's utilisation
//! drawn as its tiers, queue occupancy over time (a heatmap of ports by time and percentile
//! bands per tier), and window traces of sampled flows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::run::RunData;
use super::svg::{self, esc, fmt, Axis, Frame, LinePoint, Series};
use super::{figure_open, slug};

/// Tiers bottom-up then top-down, the order a packet crosses them.
const TIERS: [&str; 9] = [
    "host_up",
    "tor_up",
    "leaf_up",
    "agg_up",
    "core_down",
    "spine_down",
    "agg_down",
    "tor_down",
    "leaf_down",
];
/// At most this many time columns in a heatmap (intervals beyond merge).
const MAX_COLUMNS: usize = 240;
/// At most this many rows in the queue heatmap.
const MAX_ROWS: usize = 240;
/// Distinct colours in the queue heatmap.
const HEAT_LEVELS: usize = 24;
/// At most this many flows in a window trace.
const MAX_FLOWS: usize = 12;

/// A table read by column: numbers (None: empty) and text.
#[derive(Default)]
struct Table {
    num: BTreeMap<String, Vec<Option<f64>>>,
    text: BTreeMap<String, Vec<String>>,
    rows: usize,
}

impl Table {
    fn col(&self, name: &str) -> Option<&[Option<f64>]> {
        self.num.get(name).map(Vec::as_slice)
    }
}

/// Reads `dir/NAME.parquet` or `dir/NAME.csv` (None if neither exists); `text` names the columns
/// kept as strings.
fn read(dir: &Path, name: &str, text: &[&str]) -> Result<Option<Table>> {
    let csv_path = dir.join(format!("{name}.csv"));
    if csv_path.is_file() {
        return read_csv(&csv_path, text).map(Some);
    }
    let pq = dir.join(format!("{name}.parquet"));
    if pq.is_file() {
        return super::parquet::read(&pq, text).map(|t| {
            Some(Table {
                num: t.0,
                text: t.1,
                rows: t.2,
            })
        });
    }
    Ok(None)
}

fn read_csv(path: &Path, text: &[&str]) -> Result<Table> {
    let mut rd =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let h = rd.headers()?.clone();
    let mut t = Table::default();
    for c in h.iter() {
        if text.contains(&c) {
            t.text.insert(c.to_string(), Vec::new());
        } else {
            t.num.insert(c.to_string(), Vec::new());
        }
    }
    for (i, rec) in rd.records().enumerate() {
        let rec = rec.with_context(|| format!("{}: row {}", path.display(), i + 2))?;
        for (c, v) in h.iter().zip(rec.iter()) {
            if let Some(col) = t.text.get_mut(c) {
                col.push(v.to_string());
            } else if let Some(col) = t.num.get_mut(c) {
                col.push(if v.is_empty() {
                    None
                } else {
                    Some(v.parse::<f64>().with_context(|| {
                        format!(
                            "{}: row {}, column {c}: not a number",
                            path.display(),
                            i + 2
                        )
                    })?)
                });
            }
        }
        t.rows += 1;
    }
    Ok(t)
}

/// A sampled port, and its series over the time columns (mean of interval means weighted by
/// length; max of maxima; bytes summed).
struct PortSeries {
    tier: String,
    link: String,
    rate_bps: f64,
    mean: Vec<f64>,
    max: Vec<f64>,
    bytes: Vec<f64>,
}

/// A sampled flow: its id, (t_end in us, window or rate) points, and what the values are.
type FlowTrace = (u64, Vec<(f64, f64)>, &'static str);

struct Telemetry {
    end_ps: f64,
    /// Column edges in ps (columns + 1 of them).
    edges: Vec<f64>,
    ports: Vec<PortSeries>,
    flows: Vec<FlowTrace>,
}

fn load(r: &RunData) -> Result<Option<Telemetry>> {
    let dir = r.dir.join("telemetry");
    let index = read(&dir, "port_index", &["link", "tier", "from", "to"])?;
    let ports = read(&dir, "ports", &[])?;
    let flows = read(&dir, "flows", &[])?;
    if index.is_none() && flows.is_none() {
        return Ok(None);
    }
    let end_ps = r
        .summary
        .get("end_ps")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0);
    let mut out = Telemetry {
        end_ps,
        edges: Vec::new(),
        ports: Vec::new(),
        flows: Vec::new(),
    };
    if let (Some(ix), Some(p)) = (index, ports) {
        let need = |t: &Table, c: &str| -> Result<Vec<f64>> {
            Ok(t.col(c)
                .with_context(|| format!("{}: telemetry has no column `{c}`", dir.display()))?
                .iter()
                .map(|v| v.unwrap_or(0.0))
                .collect())
        };
        let (pid, rate) = (need(&ix, "port")?, need(&ix, "rate_bps")?);
        let (t0, t1, port) = (
            need(&p, "t_start_ps")?,
            need(&p, "t_end_ps")?,
            need(&p, "port")?,
        );
        let (qm, qx, bs) = (
            need(&p, "queue_mean_bytes")?,
            need(&p, "queue_max_bytes")?,
            need(&p, "bytes_sent")?,
        );
        let end = t1.iter().cloned().fold(end_ps, f64::max);
        let sample = t1
            .iter()
            .zip(&t0)
            .map(|(a, b)| a - b)
            .fold(0.0, f64::max)
            .max(1.0);
        let intervals = (end / sample).ceil().max(1.0) as usize;
        let per_col = intervals.div_ceil(MAX_COLUMNS).max(1);
        let cols = intervals.div_ceil(per_col);
        let col_ps = sample * per_col as f64;
        out.edges = (0..=cols).map(|c| (c as f64 * col_ps).min(end)).collect();
        let slot: BTreeMap<u64, usize> = pid
            .iter()
            .enumerate()
            .map(|(i, p)| (*p as u64, i))
            .collect();
        let tiers = &ix.text["tier"];
        let links = &ix.text["link"];
        out.ports = (0..pid.len())
            .map(|i| PortSeries {
                tier: tiers[i].clone(),
                link: links[i].clone(),
                rate_bps: rate[i],
                mean: vec![0.0; cols],
                max: vec![0.0; cols],
                bytes: vec![0.0; cols],
            })
            .collect();
        for row in 0..p.rows {
            let Some(&i) = slot.get(&(port[row] as u64)) else {
                continue;
            };
            let c = ((t0[row] / col_ps) as usize).min(cols - 1);
            let s = &mut out.ports[i];
            s.mean[c] += qm[row] * (t1[row] - t0[row]);
            s.max[c] = s.max[c].max(qx[row]);
            s.bytes[c] += bs[row];
        }
        for s in &mut out.ports {
            for c in 0..cols {
                let w = out.edges[c + 1] - out.edges[c];
                if w > 0.0 {
                    s.mean[c] /= w;
                }
            }
        }
    }
    if let Some(f) = flows {
        let id = f.col("flow").unwrap_or(&[]);
        let t1 = f.col("t_end_ps").unwrap_or(&[]);
        let pick = [
            ("cwnd_bytes", "congestion window (bytes)"),
            ("rate_bps", "sending rate (Gb/s)"),
            ("bytes_acked", "bytes acknowledged"),
        ]
        .into_iter()
        .find(|(c, _)| f.col(c).is_some_and(|v| v.iter().any(Option::is_some)));
        if let Some((c, label)) = pick {
            let v = f.col(c).unwrap_or(&[]);
            let mut per: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
            for row in 0..f.rows {
                let (Some(Some(fl)), Some(Some(t)), Some(Some(y))) =
                    (id.get(row), t1.get(row), v.get(row))
                else {
                    continue;
                };
                let y = if c == "rate_bps" { y / 1e9 } else { *y };
                if per.len() < MAX_FLOWS || per.contains_key(&(*fl as u64)) {
                    per.entry(*fl as u64).or_default().push((t / 1e6, y));
                }
            }
            out.flows = per.into_iter().map(|(k, v)| (k, v, label)).collect();
        }
    }
    Ok(Some(out))
}

pub fn render(o: &mut String, runs: &[RunData]) -> Result<()> {
    let mut any = false;
    o.push_str("<section id=\"telemetry\"><h2>Inside the run</h2>\n");
    for r in runs {
        let Some(t) = load(r)? else { continue };
        any = true;
        let id = slug(&r.name);
        if !t.ports.is_empty() {
            utilisation(o, r, &t, &id);
            queue_heatmap(o, r, &t, &id);
            queue_bands(o, r, &t, &id);
        }
        if !t.flows.is_empty() {
            windows(o, r, &t, &id);
        }
    }
    if !any {
        let _ = writeln!(
            o,
            "<p>No telemetry in {}: run with a <code>[telemetry]</code> section (e.g. <code>--set telemetry.enabled=true</code>) and <code>--out</code> for utilisation by tier, queue occupancy over time and window traces.</p>",
            if runs.len() > 1 { "these runs" } else { "this run" }
        );
    }
    o.push_str("</section>\n");
    Ok(())
}

/// A colour for v in [0, 1]: pale yellow through orange and red to dark purple.
fn heat(v: f64) -> String {
    const STOPS: [(f64, f64, f64); 6] = [
        (255.0, 255.0, 229.0),
        (254.0, 227.0, 145.0),
        (254.0, 153.0, 41.0),
        (217.0, 72.0, 1.0),
        (140.0, 45.0, 4.0),
        (60.0, 10.0, 60.0),
    ];
    let x = v.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let m = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

fn tier_rank(t: &str) -> usize {
    TIERS.iter().position(|x| *x == t).unwrap_or(TIERS.len())
}

/// Ports grouped by tier in crossing order (ports of a tier in index order).
fn by_tier(t: &Telemetry) -> Vec<(&str, Vec<&PortSeries>)> {
    let mut groups: Vec<(&str, Vec<&PortSeries>)> = Vec::new();
    let mut order: Vec<&PortSeries> = t.ports.iter().collect();
    order.sort_by_key(|p| tier_rank(&p.tier));
    for p in order {
        match groups.last_mut() {
            Some((tier, v)) if *tier == p.tier => v.push(p),
            _ => groups.push((&p.tier, vec![p])),
        }
    }
    groups
}

fn heat_legend(o: &mut String, x: f64, y: f64, lo: &str, hi: &str) {
    for i in 0..=20 {
        let _ = write!(
            o,
            r#"<rect x="{:.1}" y="{y:.1}" width="6" height="10" fill="{}"/>"#,
            x + i as f64 * 6.0,
            heat(i as f64 / 20.0)
        );
    }
    let _ = write!(
        o,
        r#"<text x="{x:.1}" y="{:.1}">{}</text><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
        y + 22.0,
        esc(lo),
        x + 126.0,
        y + 22.0,
        esc(hi)
    );
}

fn utilisation(o: &mut String, r: &RunData, t: &Telemetry, id: &str) {
    let groups = by_tier(t);
    let widest = groups.iter().map(|g| g.1.len()).max().unwrap_or(1);
    let cell = (860.0 / widest as f64).clamp(1.5, 16.0);
    let band = 26.0;
    let f = Frame {
        w: 110.0 + widest as f64 * cell + 30.0,
        h: groups.len() as f64 * band + 70.0,
        left: 110.0,
        right: 30.0,
        top: 10.0,
        bottom: 60.0,
    };
    let dur = t.edges.last().copied().unwrap_or(0.0) - t.edges.first().copied().unwrap_or(0.0);
    let title = format!("Utilisation by tier over the run ({})", r.name);
    figure_open(
        o,
        &format!("fig-tel-util-{id}"),
        &title,
        "Each cell is one port's mean utilisation over the sampled run (bytes sent x 8 / (rate x time)), tiers in the order a packet crosses them; an even band means the load is spread, a dark cell a hot link.",
    );
    svg::open(o, &f, &title);
    for (gi, (tier, ports)) in groups.iter().enumerate() {
        let y = f.top + gi as f64 * band;
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{} ({})</text>"#,
            f.left - 6.0,
            y + band / 2.0 + 3.0,
            esc(tier),
            ports.len()
        );
        for (pi, p) in ports.iter().enumerate() {
            let sent: f64 = p.bytes.iter().sum();
            let u = if dur > 0.0 && p.rate_bps > 0.0 {
                sent * 8.0 / (p.rate_bps * dur / 1e12)
            } else {
                0.0
            };
            let _ = write!(
                o,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{}: {:.1}%</title></rect>"#,
                f.left + pi as f64 * cell,
                cell.max(1.0),
                band - 4.0,
                heat(u),
                esc(&p.link),
                u * 100.0
            );
        }
    }
    heat_legend(o, f.left, f.h - 40.0, "0%", "100% utilised");
    o.push_str("</svg></figure>\n");
}

fn queue_heatmap(o: &mut String, r: &RunData, t: &Telemetry, id: &str) {
    let tiers = by_tier(t);
    let ports: usize = tiers.iter().map(|g| g.1.len()).sum();
    let cols = t.edges.len().saturating_sub(1);
    if cols == 0 || ports == 0 {
        return;
    }
    // Rows of at most MAX_ROWS: neighbouring ports of a tier share a row showing their largest
    // time-average, so hot spots stay visible and the page small.
    let per_row = ports.div_ceil(MAX_ROWS);
    let groups: Vec<(&str, Vec<Vec<f64>>)> = tiers
        .iter()
        .map(|(tier, ps)| {
            let rows = ps
                .chunks(per_row)
                .map(|c| {
                    (0..cols)
                        .map(|k| c.iter().map(|p| p.mean[k]).fold(0.0, f64::max))
                        .collect()
                })
                .collect();
            (*tier, rows)
        })
        .collect();
    let n: usize = groups.iter().map(|g| g.1.len()).sum();
    let row = (520.0 / n as f64).clamp(0.5, 8.0);
    let cw = 760.0 / cols as f64;
    let f = Frame {
        w: 110.0 + 760.0 + 20.0,
        h: n as f64 * row + (groups.len() as f64) * 3.0 + 100.0,
        left: 110.0,
        right: 20.0,
        top: 10.0,
        bottom: 90.0,
    };
    // Colour by log occupancy up to the largest time-average seen.
    let top = t
        .ports
        .iter()
        .flat_map(|p| p.mean.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0);
    let scale = |q: f64| (1.0 + q).ln() / (1.0 + top).ln();
    let title = format!("Queue occupancy, ports by time ({})", r.name);
    figure_open(
        o,
        &format!("fig-tel-queue-heat-{id}"),
        &title,
        &format!(
            "One row per {} (grouped by tier, crossing order), one column per {} us; colour is the time-averaged queue (log scale, darkest {} B): where and when queues build.",
            if per_row > 1 { format!("{per_row} neighbouring ports (their largest)") } else { "port".into() },
            fmt((t.edges[1] - t.edges[0]) / 1e6),
            fmt(top)
        ),
    );
    svg::open(o, &f, &title);
    let mut y = f.top;
    for (tier, ports) in &groups {
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.left - 6.0,
            y + (ports.len() as f64 * row) / 2.0 + 4.0,
            esc(tier)
        );
        for mean in ports {
            // Colours quantized to HEAT_LEVELS, equal neighbours drawn as one rectangle: the
            // page stays small for hundreds of ports.
            let level = |q: f64| {
                if q <= 0.0 {
                    0
                } else {
                    1 + (scale(q) * (HEAT_LEVELS - 1) as f64).round() as usize
                }
            };
            let mut c = 0;
            while c < mean.len() {
                let l = level(mean[c]);
                let mut e = c + 1;
                while e < mean.len() && level(mean[e]) == l {
                    e += 1;
                }
                if l > 0 {
                    let _ = write!(
                        o,
                        r#"<rect x="{:.1}" y="{y:.2}" width="{:.2}" height="{:.2}" fill="{}"/>"#,
                        f.left + c as f64 * cw,
                        (e - c) as f64 * cw + 0.05,
                        row,
                        heat((l - 1) as f64 / (HEAT_LEVELS - 1) as f64)
                    );
                }
                c = e;
            }
            y += row;
        }
        y += 3.0;
    }
    let x = Axis::linear([0.0, t.end_ps.max(t.edges[cols]) / 1e6].into_iter(), true);
    let axis_frame = Frame {
        w: f.w,
        h: y + 40.0,
        left: f.left,
        right: f.right,
        top: f.top,
        bottom: 40.0,
    };
    svg::x_axis(o, &axis_frame, &x, "time (us)");
    heat_legend(o, f.left, y + 48.0, "empty", &format!("{} B", fmt(top)));
    o.push_str("</svg></figure>\n");
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn queue_bands(o: &mut String, r: &RunData, t: &Telemetry, id: &str) {
    let cols = t.edges.len().saturating_sub(1);
    if cols == 0 {
        return;
    }
    let mid: Vec<f64> = (0..cols)
        .map(|c| (t.edges[c] + t.edges[c + 1]) / 2e6)
        .collect();
    for (tier, ports) in by_tier(t) {
        if tier == "host_up" {
            continue;
        }
        let mut series: Vec<Series> = Vec::new();
        for (name, p, colour) in [
            ("median", 0.5, "#2f7fd0"),
            ("p90", 0.9, "#e6550d"),
            ("p99", 0.99, "#a63603"),
        ] {
            let pts = (0..cols)
                .map(|c| {
                    let mut v: Vec<f64> = ports.iter().map(|s| s.mean[c]).collect();
                    let y = percentile(&mut v, p);
                    LinePoint::at(mid[c], y)
                })
                .collect();
            series.push(Series {
                name: name.into(),
                color: colour.into(),
                points: pts,
            });
        }
        let max_pts: Vec<LinePoint> = (0..cols)
            .map(|c| {
                let y = ports.iter().map(|s| s.max[c]).fold(0.0, f64::max);
                LinePoint::at(mid[c], y)
            })
            .collect();
        series.push(Series {
            name: "max (instant)".into(),
            color: "#999999".into(),
            points: max_pts,
        });
        let f = Frame::new(620.0, 240.0);
        let x = Axis::linear(mid.iter().copied(), true);
        let y = Axis::linear(
            series.iter().flat_map(|s| s.points.iter().map(|p| p.y)),
            true,
        );
        let title = format!("Queue over time, {tier} ports ({})", r.name);
        figure_open(
            o,
            &format!("fig-tel-queue-{}-{id}", slug(tier)),
            &title,
            &format!(
                "Across the tier's {} ports, per time column: the median, p90 and p99 of the time-averaged queue, and the largest instantaneous queue; a wide gap between median and p99 is imbalance.",
                ports.len()
            ),
        );
        svg::open(o, &f, &title);
        svg::y_axis(o, &f, &y, "queue (bytes)");
        svg::x_axis(o, &f, &x, "time (us)");
        svg::traces(o, &f, &y, &series, &|v| x.map(v, f.x0(), f.x1()));
        svg::series_legend(o, &f, &series);
        o.push_str("</svg></figure>\n");
    }
}

fn windows(o: &mut String, r: &RunData, t: &Telemetry, id: &str) {
    let label = t.flows[0].2;
    let f = Frame::new(640.0, 280.0);
    let x = Axis::linear(t.flows.iter().flat_map(|f| f.1.iter().map(|p| p.0)), true);
    let y = Axis::linear(t.flows.iter().flat_map(|f| f.1.iter().map(|p| p.1)), true);
    let series: Vec<Series> = t
        .flows
        .iter()
        .enumerate()
        .map(|(i, (fl, pts, _))| Series {
            name: format!("flow {fl}"),
            color: svg::PALETTE[i % svg::PALETTE.len()].into(),
            points: pts.iter().map(|&(a, b)| LinePoint::at(a, b)).collect(),
        })
        .collect();
    let title = format!("Sampled flows: {label} over time ({})", r.name);
    figure_open(
        o,
        &format!("fig-tel-window-{id}"),
        &title,
        &format!(
            "One line per sampled flow (at most {MAX_FLOWS}), read at each interval's end: how the congestion control reacted."
        ),
    );
    svg::open(o, &f, &title);
    svg::y_axis(o, &f, &y, label);
    svg::x_axis(o, &f, &x, "time (us)");
    svg::traces(o, &f, &y, &series, &|v| x.map(v, f.x0(), f.x1()));
    svg::series_legend(o, &f, &series);
    o.push_str("</svg></figure>\n");
}
