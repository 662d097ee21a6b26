//! Minimal inline-SVG charts (bars with whiskers, lines, log or linear axes): no scripts, no
//! fonts or files fetched, so the report is one self-contained file.

use std::fmt::Write as _;

/// One color per scheme in registry order (ecmp, subflow, plb, flowlet_ar, host_spray,
/// switch_rr, switch_rr_simple, switch_random, switch_jsq, switch_ar, reps, host_dr, ofan).
pub const PALETTE: &[&str] = &[
    "#1f77b4", "#8c564b", "#bcbd22", "#7f7f7f", "#9467bd", "#ff7f0e", "#e377c2", "#17becf",
    "#d4a017", "#2ca02c", "#000000", "#d62728", "#0b3d91", "#555555",
];

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Short number text for ticks and labels.
pub fn fmt(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[derive(Clone, Copy)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Axis {
    /// A linear axis over the values (from zero if `zero`), padded a little.
    pub fn linear(vals: impl Iterator<Item = f64>, zero: bool) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in vals.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if zero {
            lo = lo.min(0.0);
        }
        if hi - lo <= 0.0 {
            hi = lo + 1.0;
        }
        let pad = (hi - lo) * 0.05;
        Axis {
            lo: if zero && lo == 0.0 { 0.0 } else { lo - pad },
            hi: hi + pad,
            log: false,
        }
    }

    /// A log10 axis over the positive values, widened to whole decades when narrow.
    pub fn log(vals: impl Iterator<Item = f64>) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in vals.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        Axis {
            lo: 10f64.powf(lo.log10().floor()),
            hi: 10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
            log: true,
        }
    }

    /// Maps v onto [a, b].
    pub fn map(&self, v: f64, a: f64, b: f64) -> f64 {
        let t = if self.log {
            (v.max(self.lo * 1e-3).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        a + t * (b - a)
    }

    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut d = self.lo;
            while d <= self.hi * 1.0001 {
                t.push(d);
                d *= 10.0;
            }
            return t;
        }
        let raw = (self.hi - self.lo) / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let mut t = Vec::new();
        let mut v = (self.lo / step).ceil() * step;
        while v <= self.hi + step * 1e-9 {
            t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
            v += step;
        }
        t
    }
}

pub struct Frame {
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    pub fn new(w: f64, h: f64) -> Frame {
        Frame {
            w,
            h,
            left: 64.0,
            right: 180.0,
            top: 16.0,
            bottom: 56.0,
        }
    }
    pub fn x0(&self) -> f64 {
        self.left
    }
    pub fn x1(&self) -> f64 {
        self.w - self.right
    }
    pub fn y0(&self) -> f64 {
        self.h - self.bottom
    }
    pub fn y1(&self) -> f64 {
        self.top
    }
}

pub fn open(o: &mut String, f: &Frame, title: &str) {
    let _ = write!(
        o,
        r#"<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" font-family="sans-serif" font-size="11"><title>{t}</title>"#,
        w = f.w,
        h = f.h,
        t = esc(title)
    );
}

/// Y axis with grid lines and label; ticks from `y`.
pub fn y_axis(o: &mut String, f: &Frame, y: &Axis, label: &str) {
    for t in y.ticks() {
        let py = y.map(t, f.y0(), f.y1());
        let _ = write!(
            o,
            r##"<line x1="{x0}" x2="{x1}" y1="{py:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            x0 = f.x0(),
            x1 = f.x1(),
            tx = f.x0() - 4.0,
            ty = py + 4.0,
            l = fmt(t)
        );
    }
    let _ = write!(
        o,
        r##"<line x1="{x0}" x2="{x0}" y1="{a}" y2="{b}" stroke="#333"/><line x1="{x0}" x2="{x1}" y1="{a}" y2="{a}" stroke="#333"/><text transform="translate(14 {m}) rotate(-90)" text-anchor="middle">{l}</text>"##,
        x0 = f.x0(),
        x1 = f.x1(),
        a = f.y0(),
        b = f.y1(),
        m = (f.y0() + f.y1()) / 2.0,
        l = esc(label)
    );
}

/// Numeric x axis ticks and label.
pub fn x_axis(o: &mut String, f: &Frame, x: &Axis, label: &str) {
    for t in x.ticks() {
        let px = x.map(t, f.x0(), f.x1());
        let _ = write!(
            o,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{a}" y2="{b}" stroke="#333"/><text x="{px:.1}" y="{ty}" text-anchor="middle">{l}</text>"##,
            a = f.y0(),
            b = f.y0() + 4.0,
            ty = f.y0() + 16.0,
            l = fmt(t)
        );
    }
    x_label(o, f, label);
}

pub fn x_label(o: &mut String, f: &Frame, label: &str) {
    let _ = write!(
        o,
        r#"<text x="{m}" y="{y}" text-anchor="middle">{l}</text>"#,
        m = (f.x0() + f.x1()) / 2.0,
        y = f.h - 8.0,
        l = esc(label)
    );
}

/// Legend entries (color, text) to the right of the plot.
pub fn legend(o: &mut String, f: &Frame, items: &[(String, String)]) {
    for (i, (color, text)) in items.iter().enumerate() {
        let y = f.y1() + 6.0 + i as f64 * 16.0;
        let _ = write!(
            o,
            r#"<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/><text x="{tx}" y="{ty}">{t}</text>"#,
            x = f.x1() + 12.0,
            tx = f.x1() + 26.0,
            ty = y + 9.0,
            t = esc(text)
        );
    }
}

/// One series of a line chart: (x, y, low, high, open marker) points.
pub struct Series {
    pub name: String,
    pub color: String,
    pub points: Vec<LinePoint>,
}

pub struct LinePoint {
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
    /// Drawn hollow: a lower estimate (e.g. an unfinished run's end over the bound).
    pub hollow: bool,
}

impl LinePoint {
    /// A plain point: no whisker, filled.
    pub fn at(x: f64, y: f64) -> LinePoint {
        LinePoint {
            x,
            y,
            lo: y,
            hi: y,
            hollow: false,
        }
    }
}

/// A legend entry per series, in order.
pub fn series_legend(o: &mut String, f: &Frame, series: &[Series]) {
    let items: Vec<(String, String)> = series
        .iter()
        .map(|s| (s.color.clone(), s.name.clone()))
        .collect();
    legend(o, f, &items);
}

/// Lines with whiskers; `xmap` places x values (numeric or categorical).
pub fn lines(o: &mut String, f: &Frame, y: &Axis, series: &[Series], xmap: &dyn Fn(f64) -> f64) {
    draw_lines(o, f, y, series, xmap, true);
}

/// Lines only, no markers: time series with hundreds of points.
pub fn traces(o: &mut String, f: &Frame, y: &Axis, series: &[Series], xmap: &dyn Fn(f64) -> f64) {
    draw_lines(o, f, y, series, xmap, false);
}

fn draw_lines(
    o: &mut String,
    f: &Frame,
    y: &Axis,
    series: &[Series],
    xmap: &dyn Fn(f64) -> f64,
    markers: bool,
) {
    for s in series {
        let path: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", xmap(p.x), y.map(p.y, f.y0(), f.y1())))
            .collect();
        if path.len() > 1 {
            let _ = write!(
                o,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"/>"#,
                s.color,
                path.join(" ")
            );
        }
        for p in s.points.iter().filter(|_| markers) {
            let px = xmap(p.x);
            let py = y.map(p.y, f.y0(), f.y1());
            if p.hi > p.lo {
                let _ = write!(
                    o,
                    r#"<line x1="{px:.1}" x2="{px:.1}" y1="{:.1}" y2="{:.1}" stroke="{}"/>"#,
                    y.map(p.lo, f.y0(), f.y1()),
                    y.map(p.hi, f.y0(), f.y1()),
                    s.color
                );
            }
            let fill = if p.hollow { "white" } else { s.color.as_str() };
            let _ = write!(
                o,
                r#"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="{fill}" stroke="{}"><title>{}: {}</title></circle>"#,
                s.color,
                esc(&s.name),
                fmt(p.y)
            );
        }
    }
}
