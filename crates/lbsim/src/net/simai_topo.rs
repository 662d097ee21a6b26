//! SimAI's topology files, the input of its ns-3 backend (what its `gen_Topo_Template.py`
//! writes for Spectrum-X, AlibabaHPN, DCN+ and the rail-optimized and plain variants).
//!
//! Line 1 is the header `node_count gpus_per_server nvswitch_count switch_count link_count
//! gpu_type`; node ids are GPUs first, then NVSwitches, then network switches. Line 2 lists the
//! switch ids, the NVSwitches first. Every further line is one bidirectional cable, `src dst
//! rate latency error_rate` (`0 16 2880Gbps 0.000025ms 0`). Blank lines are skipped.
//!
//! The file does not name tiers; they follow from the graph: tier 0 is the network switches
//! the GPUs link to, tier 1 the switches linked to tier 0, and so on (at most four, named as
//! SimAI names them: asw, psw, dsw, csw). A GPU links to every NVSwitch of its server (its
//! scale-up domain) and to one or more tier-0 switches (two with dual ToRs); a cable between
//! switches joins adjacent tiers. Rates and latencies are read as exact decimals (a rate to
//! the nearest bit per second, a latency to the nearest picosecond).
//!
//! Every defect is refused with the line it is on (the header's for counts that do not add up
//! or a GPU with no links at all; line 0 for what only the Builder refuses, e.g. a top switch
//! that does not reach every GPU). Repeated cables between one pair of nodes are refused, and
//! so is a non-zero error rate. Nothing is allocated past what the header's capped counts and
//! the text itself bound.

use std::path::Path;

use crate::config::ConfigError;
use crate::ids::{HostId, NodeId, SwitchId};
use crate::net::topology::{Builder, LinkParams, Topology, SCALE_UP};
use crate::time::{BitsPerSec, SimTime};

/// node_count must be below this.
pub const MAX_NODES: u64 = 1 << 24;
/// link_count must be below this.
pub const MAX_LINKS: u64 = 1 << 26;
/// The most network switch tiers.
pub const MAX_TIERS: usize = 4;
/// SimAI's tier names, lowest first.
const TIER_NAMES: &[&str] = &["asw", "psw", "dsw", "csw"];
/// The slowest and fastest link lbsim takes (as `topology.link_gbps`: 1 kb/s to 1e9 Gb/s).
const MIN_BPS: u64 = 1_000;
const MAX_BPS: u64 = 1_000_000_000_000_000_000;
/// Latencies must be below one second (as `topology.link_latency_ns`).
const MAX_LATENCY_PS: u64 = 1_000_000_000_000;

const HEADER: &str = "node_count gpus_per_server nvswitch_count switch_count link_count gpu_type";

/// Reads the SimAI topology file at `path`.
pub fn load(path: &Path) -> Result<Topology, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.display().to_string(),
        msg: format!("cannot read SimAI topology: {e}"),
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses SimAI topology `text` (`name` for errors and the label) into a fabric: host h is GPU
/// h, each with its network links (tier 0 first by switch) then its NVSwitch links.
pub fn parse(text: &str, name: &str) -> Result<Topology, ConfigError> {
    let g = read(text, name)?;
    build(&g, name)
}

/// Hosts (GPUs) and ports (two per cable) the header declares, if it is well formed.
pub fn size(text: &str) -> Option<(u128, u128)> {
    let (_, line) = content_lines(text).next()?;
    let h = header(line).ok()?;
    Some((h.gpus() as u128, 2 * h.links as u128))
}

/// The non-blank lines, numbered from 1.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
}

#[derive(Clone, Copy, Debug)]
struct Header {
    nodes: u32,
    gps: u32,
    nv: u32,
    sw: u32,
    links: u32,
}

impl Header {
    fn gpus(&self) -> u32 {
        self.nodes - self.nv - self.sw
    }
    /// NVSwitches per server.
    fn nv_per_server(&self) -> u32 {
        self.nv / (self.gpus() / self.gps)
    }
    fn kind(&self, id: u32) -> Kind {
        let g = self.gpus();
        if id < g {
            Kind::Gpu
        } else if id < g + self.nv {
            Kind::Nv
        } else {
            Kind::Sw
        }
    }
    /// The server of GPU `id`, or of NVSwitch `id`.
    fn server(&self, id: u32) -> u32 {
        match self.kind(id) {
            Kind::Gpu => id / self.gps,
            _ => (id - self.gpus()) / self.nv_per_server(),
        }
    }
    fn what(&self, id: u32) -> String {
        match self.kind(id) {
            Kind::Gpu => format!("GPU {id}"),
            Kind::Nv => format!("NVSwitch {id}"),
            Kind::Sw => format!("switch {id}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gpu,
    Nv,
    Sw,
}

#[derive(Clone, Copy, Debug)]
struct Cable {
    a: u32,
    b: u32,
    rate: BitsPerSec,
    latency: SimTime,
    line: usize,
}

/// A checked file: its cables, each node's neighbours, each network switch's tier.
struct Graph {
    head: Header,
    cables: Vec<Cable>,
    /// Node v's neighbours (node, cable), by node: `adj[start[v]..start[v + 1]]`.
    start: Vec<u32>,
    adj: Vec<(u32, u32)>,
    /// By network switch (id - gpus - nvswitches).
    tier: Vec<u8>,
}

impl Graph {
    fn adj(&self, v: u32) -> &[(u32, u32)] {
        &self.adj[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }
    fn sw_base(&self) -> u32 {
        self.head.gpus() + self.head.nv
    }
}

fn header(text: &str) -> Result<Header, String> {
    const NAMES: [&str; 5] = [
        "node_count",
        "gpus_per_server",
        "nvswitch_count",
        "switch_count",
        "link_count",
    ];
    let mut toks = text.split_whitespace();
    let mut v = [0u64; 5];
    for (slot, name) in v.iter_mut().zip(NAMES) {
        let t = toks
            .next()
            .ok_or_else(|| format!("the header lacks `{name}` (it is `{HEADER}`)"))?;
        *slot = t
            .parse()
            .map_err(|_| format!("header field `{name}`: `{t}` is not a non-negative integer"))?;
    }
    if toks.next().is_none() {
        return Err(format!("the header lacks `gpu_type` (it is `{HEADER}`)"));
    }
    if let Some(t) = toks.next() {
        return Err(format!("extra token `{t}` after the header's gpu_type"));
    }
    let [nodes, gps, nv, sw, links] = v;
    if nodes >= MAX_NODES {
        return Err(format!(
            "node_count {nodes}: lbsim reads fewer than 2^24 nodes"
        ));
    }
    if links >= MAX_LINKS {
        return Err(format!(
            "link_count {links}: lbsim reads fewer than 2^26 links"
        ));
    }
    if nv + sw > nodes {
        return Err(format!(
            "nvswitch_count {nv} + switch_count {sw} exceed node_count {nodes}"
        ));
    }
    let gpus = nodes - nv - sw;
    if gpus < 2 {
        return Err(format!(
            "{gpus} GPUs (node_count less the switches): lbsim needs at least 2"
        ));
    }
    if sw == 0 {
        return Err("switch_count 0: the GPUs need network switches".into());
    }
    if gps == 0 || gpus % gps != 0 {
        return Err(format!(
            "gpus_per_server {gps} does not divide the {gpus} GPUs into servers"
        ));
    }
    let servers = gpus / gps;
    if nv % servers != 0 {
        return Err(format!(
            "nvswitch_count {nv} is not a whole number per server ({servers} servers of {gps} \
             GPUs)"
        ));
    }
    Ok(Header {
        nodes: nodes as u32,
        gps: gps as u32,
        nv: nv as u32,
        sw: sw as u32,
        links: links as u32,
    })
}

/// Checks the switch id line: the NVSwitch ids first, then the network switches', each group
/// in any order.
fn switch_ids(h: &Header, text: &str) -> Result<(), String> {
    let (gpus, nv, want) = (h.gpus() as u64, h.nv as u64, (h.nv + h.sw) as u64);
    let mut ids = Vec::new();
    for t in text.split_whitespace() {
        if ids.len() as u64 == want {
            return Err(format!(
                "extra token `{t}`: the header declares {want} switches ({nv} NVSwitches, {} \
                 network switches)",
                h.sw
            ));
        }
        ids.push(
            t.parse::<u64>()
                .map_err(|_| format!("switch id `{t}` is not a non-negative integer"))?,
        );
    }
    if (ids.len() as u64) < want {
        return Err(format!(
            "{} switch ids; the header declares {want} ({nv} NVSwitches, {} network switches)",
            ids.len(),
            h.sw
        ));
    }
    let (nvs, sws) = ids.split_at_mut(nv as usize);
    for (part, lo, what) in [(nvs, gpus, "NVSwitch"), (sws, gpus + nv, "network switch")] {
        part.sort_unstable();
        for (i, &id) in part.iter().enumerate() {
            let expect = lo + i as u64;
            if id != expect {
                let hi = lo + part.len() as u64 - 1;
                let bad = if id > expect { expect } else { id };
                return Err(format!(
                    "the {what} ids must be {lo} to {hi}, each once, NVSwitches first (GPUs \
                     are 0 to {}); {bad} {}",
                    gpus - 1,
                    if id > expect {
                        "is missing"
                    } else {
                        "is out of place or repeated"
                    }
                ));
            }
        }
    }
    Ok(())
}

/// One cable line.
fn cable(h: &Header, line: usize, text: &str) -> Result<Cable, String> {
    const NAMES: [&str; 5] = ["src", "dst", "rate", "latency", "error_rate"];
    let mut toks = text.split_whitespace();
    let mut f = [""; 5];
    for (slot, name) in f.iter_mut().zip(NAMES) {
        *slot = toks.next().ok_or_else(|| {
            format!("the link lacks `{name}` (a link is `src dst rate latency error_rate`)")
        })?;
    }
    if let Some(t) = toks.next() {
        return Err(format!("extra token `{t}` after the link's error rate"));
    }
    let mut ends = [0u32; 2];
    for (slot, t) in ends.iter_mut().zip(&f[..2]) {
        let id: u64 = t
            .parse()
            .map_err(|_| format!("node id `{t}` is not a non-negative integer"))?;
        if id >= h.nodes as u64 {
            return Err(format!(
                "node id {id} is out of range (node ids are 0 to {})",
                h.nodes - 1
            ));
        }
        *slot = id as u32;
    }
    let [a, b] = ends;
    if a == b {
        return Err(format!("a link from {} to itself", h.what(a)));
    }
    match (h.kind(a), h.kind(b)) {
        (Kind::Gpu, Kind::Gpu) => {
            return Err(format!(
                "a link between GPUs {a} and {b}: GPUs link to NVSwitches and switches only"
            ))
        }
        (Kind::Nv, Kind::Gpu) | (Kind::Gpu, Kind::Nv) => {
            let (g, n) = if h.kind(a) == Kind::Gpu {
                (a, b)
            } else {
                (b, a)
            };
            if h.server(g) != h.server(n) {
                return Err(format!(
                    "GPU {g} (server {}) links to NVSwitch {n} of server {}: a GPU links to its \
                     own server's NVSwitches ({} GPUs per server)",
                    h.server(g),
                    h.server(n),
                    h.gps
                ));
            }
        }
        (Kind::Nv, _) | (_, Kind::Nv) => {
            let (n, o) = if h.kind(a) == Kind::Nv {
                (a, b)
            } else {
                (b, a)
            };
            return Err(format!(
                "NVSwitch {n} links to {}: an NVSwitch links to GPUs only",
                h.what(o)
            ));
        }
        _ => {}
    }
    let rate = rate(f[2])?;
    let latency = latency(f[3])?;
    error_rate(f[4])?;
    Ok(Cable {
        a,
        b,
        rate,
        latency,
        line,
    })
}

/// A decimal number: `mant` x 10^`exp`, negative if `neg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decimal {
    neg: bool,
    mant: u128,
    exp: i64,
}

/// Significant digits past this many are dropped (far below any rounding that matters).
const MANT_CAP: u128 = 1_000_000_000_000_000_000_000_000_000_000_000_000;

/// `[+-]digits[.digits][e[+-]digits]` (a digit on at least one side of the point).
fn decimal(s: &str) -> Option<Decimal> {
    let b = s.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let (mut mant, mut exp, mut digits, mut dot) = (0u128, 0i64, 0usize, false);
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                digits += 1;
                if mant < MANT_CAP {
                    mant = mant * 10 + (c - b'0') as u128;
                    if dot {
                        exp -= 1;
                    }
                } else if !dot {
                    exp += 1;
                }
            }
            b'.' if !dot => dot = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() {
        if b[i] != b'e' && b[i] != b'E' {
            return None;
        }
        i += 1;
        let eneg = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let from = i;
        let mut e = 0i64;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            e = (e * 10 + (c - b'0') as i64).min(1_000_000);
            i += 1;
        }
        if i == from || i < b.len() {
            return None;
        }
        exp += if eneg { -e } else { e };
    }
    Some(Decimal { neg, mant, exp })
}

/// |`d`| x 10^`shift` to the nearest integer (halves away from zero); None past u64.
fn scaled(d: Decimal, shift: i64) -> Option<u64> {
    if d.mant == 0 {
        return Some(0);
    }
    let e = d.exp.saturating_add(shift);
    let v = if e >= 0 {
        if e > 38 {
            return None;
        }
        d.mant.checked_mul(10u128.pow(e as u32))?
    } else if e < -38 {
        0
    } else {
        let p = 10u128.pow((-e) as u32);
        let (q, r) = (d.mant / p, d.mant % p);
        q + u128::from(r >= p - r)
    };
    u64::try_from(v).ok()
}

/// Splits a case-insensitive unit suffix off `tok`.
fn unit<'a>(tok: &'a str, units: &[(&str, i64)]) -> Option<(&'a str, i64)> {
    units.iter().find_map(|&(u, shift)| {
        let n = tok.len().checked_sub(u.len())?;
        let (num, suffix) = (tok.get(..n)?, tok.get(n..)?);
        suffix.eq_ignore_ascii_case(u).then_some((num, shift))
    })
}

/// A rate: a decimal and bps, Kbps, Mbps, Gbps or Tbps (powers of 1000, any case).
fn rate(tok: &str) -> Result<BitsPerSec, String> {
    const UNITS: [(&str, i64); 5] = [
        ("tbps", 12),
        ("gbps", 9),
        ("mbps", 6),
        ("kbps", 3),
        ("bps", 0),
    ];
    let (num, shift) = unit(tok, &UNITS)
        .ok_or_else(|| format!("rate `{tok}` has no unit (bps, Kbps, Mbps, Gbps or Tbps)"))?;
    let d = decimal(num).ok_or_else(|| format!("rate `{tok}`: `{num}` is not a number"))?;
    if d.neg || d.mant == 0 {
        return Err(format!("rate `{tok}` is not positive"));
    }
    match scaled(d, shift) {
        Some(bps) if bps > MAX_BPS => Err(format!("rate `{tok}` is above 1e9 Gbps")),
        None => Err(format!("rate `{tok}` is above 1e9 Gbps")),
        Some(bps) if bps < MIN_BPS => Err(format!(
            "rate `{tok}` is below 1 Kbps, the slowest link lbsim takes"
        )),
        Some(bps) => Ok(BitsPerSec(bps)),
    }
}

/// A latency: a decimal and s, ms, us, ns or ps (any case), at least 0 and below a second.
fn latency(tok: &str) -> Result<SimTime, String> {
    const UNITS: [(&str, i64); 5] = [("ps", 0), ("ns", 3), ("us", 6), ("ms", 9), ("s", 12)];
    let (num, shift) = unit(tok, &UNITS)
        .ok_or_else(|| format!("latency `{tok}` has no unit (s, ms, us, ns or ps)"))?;
    let d = decimal(num).ok_or_else(|| format!("latency `{tok}`: `{num}` is not a number"))?;
    if d.neg && d.mant != 0 {
        return Err(format!("latency `{tok}` is negative"));
    }
    match scaled(d, shift) {
        Some(ps) if ps < MAX_LATENCY_PS => Ok(SimTime(ps)),
        _ => Err(format!("latency `{tok}` is not below 1 s")),
    }
}

fn error_rate(tok: &str) -> Result<(), String> {
    match decimal(tok) {
        Some(d) if d.mant == 0 => Ok(()),
        Some(_) => Err(format!(
            "error rate {tok}: lbsim takes no per-link random loss from a topology file; use \
             [[failures]] kind = \"flaky\""
        )),
        None => Err(format!("error rate `{tok}` is not a number")),
    }
}

/// Reads and checks `text` into a graph with tiers.
fn read(text: &str, name: &str) -> Result<Graph, ConfigError> {
    let e = |line: usize, msg: String| ConfigError::Trace {
        path: name.to_string(),
        line,
        msg,
    };
    let mut lines = content_lines(text);
    let Some((hl, hline)) = lines.next() else {
        return Err(e(1, format!("empty file: expected the header `{HEADER}`")));
    };
    let head = header(hline).map_err(|m| e(hl, m))?;
    let Some((sl, sline)) = lines.next() else {
        return Err(e(hl + 1, "missing the line of switch ids".into()));
    };
    switch_ids(&head, sline).map_err(|m| e(sl, m))?;
    let mut cables: Vec<Cable> = Vec::with_capacity((head.links as usize).min(text.len() / 16));
    for (ln, l) in lines {
        if cables.len() as u64 == head.links as u64 {
            return Err(e(
                ln,
                format!(
                    "more link lines than link_count {} in the header (line {hl})",
                    head.links
                ),
            ));
        }
        cables.push(cable(&head, ln, l).map_err(|m| e(ln, m))?);
    }
    if cables.len() as u64 != head.links as u64 {
        return Err(e(
            hl,
            format!(
                "link_count {} but the file has {} link lines",
                head.links,
                cables.len()
            ),
        ));
    }
    // A node on no cable, found without allocating per node when the cables cannot cover
    // every node (the header's node count is bounded only by the cap).
    let isolated = |v: u32| -> ConfigError {
        match head.kind(v) {
            Kind::Gpu => e(hl, format!("GPU {v} has no links")),
            Kind::Nv => e(sl, format!("NVSwitch {v} has no links")),
            Kind::Sw => e(
                sl,
                format!("switch {v} has no links: it is not reachable from the GPUs"),
            ),
        }
    };
    let n = head.nodes as usize;
    if n > 2 * cables.len() {
        let mut ends: Vec<u32> = cables.iter().flat_map(|c| [c.a, c.b]).collect();
        ends.sort_unstable();
        ends.dedup();
        let v = ends
            .iter()
            .enumerate()
            .find(|&(i, &x)| i as u32 != x)
            .map_or(ends.len(), |(i, _)| i);
        return Err(isolated(v as u32));
    }
    // Neighbour lists.
    let mut start = vec![0u32; n + 1];
    for c in &cables {
        start[c.a as usize + 1] += 1;
        start[c.b as usize + 1] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut adj = vec![(0u32, 0u32); 2 * cables.len()];
    for (i, c) in cables.iter().enumerate() {
        for (x, y) in [(c.a, c.b), (c.b, c.a)] {
            adj[fill[x as usize] as usize] = (y, i as u32);
            fill[x as usize] += 1;
        }
    }
    let mut g = Graph {
        head,
        cables,
        start,
        adj,
        tier: Vec::new(),
    };
    let mut dup: Option<(usize, usize, u32, u32)> = None;
    for v in 0..head.nodes {
        let (a, b) = (
            g.start[v as usize] as usize,
            g.start[v as usize + 1] as usize,
        );
        let s = &mut g.adj[a..b];
        s.sort_unstable();
        for w in s.windows(2) {
            if w[0].0 == w[1].0 {
                let (first, second) = (g.cables[w[0].1 as usize], g.cables[w[1].1 as usize]);
                if dup.is_none_or(|d| second.line < d.1) {
                    dup = Some((first.line, second.line, first.a, first.b));
                }
            }
        }
    }
    if let Some((l0, l1, a, b)) = dup {
        return Err(e(
            l1,
            format!(
                "a second link between {} and {} (the first is on line {l0}): lbsim takes one \
                 cable per pair of nodes",
                head.what(a),
                head.what(b)
            ),
        ));
    }
    let first_line = |g: &Graph, v: u32, or: usize| {
        g.adj(v)
            .iter()
            .map(|&(_, c)| g.cables[c as usize].line)
            .min()
            .unwrap_or(or)
    };
    let (gpus, sw_base) = (head.gpus(), g.sw_base());
    let per = head.nv_per_server();
    for v in 0..gpus {
        let nb = g.adj(v);
        let net = nb.iter().filter(|x| x.0 >= sw_base).count();
        if net == 0 {
            let msg = if nb.is_empty() {
                format!("GPU {v} has no links")
            } else {
                format!("GPU {v} has no link to a network switch")
            };
            return Err(e(first_line(&g, v, hl), msg));
        }
        if net >= 1 << 16 {
            return Err(e(
                first_line(&g, v, hl),
                format!("GPU {v} has {net} network links; lbsim takes fewer than 65536"),
            ));
        }
        // Cables to other servers' NVSwitches and repeats are refused already: a shortfall is a
        // missing NVSwitch of the GPU's own server.
        let nvs: Vec<u32> = nb
            .iter()
            .map(|x| x.0)
            .filter(|&x| head.kind(x) == Kind::Nv)
            .collect();
        if nvs.len() as u32 != per {
            let first = gpus + head.server(v) * per;
            let miss = (first..first + per)
                .find(|x| !nvs.contains(x))
                .unwrap_or(first);
            return Err(e(
                first_line(&g, v, hl),
                format!(
                    "GPU {v} has no link to NVSwitch {miss}: a GPU links to each of its server's \
                     {per} NVSwitches ({} to {})",
                    first,
                    first + per - 1
                ),
            ));
        }
    }
    // Tiers, breadth first from the GPUs.
    let mut tier = vec![u8::MAX; head.sw as usize];
    let mut queue: Vec<u32> = Vec::new();
    for v in 0..gpus {
        for &(x, _) in g.adj(v) {
            if x >= sw_base && tier[(x - sw_base) as usize] == u8::MAX {
                tier[(x - sw_base) as usize] = 0;
                queue.push(x);
            }
        }
    }
    let mut next = 0;
    while let Some(&s) = queue.get(next) {
        next += 1;
        let t = tier[(s - sw_base) as usize];
        for &(x, c) in g.adj(s) {
            if x >= sw_base && tier[(x - sw_base) as usize] == u8::MAX {
                if t as usize + 1 >= MAX_TIERS {
                    return Err(e(
                        g.cables[c as usize].line,
                        format!(
                            "switch {x} is on tier {} (counting from 0, the switches the GPUs \
                             link to): lbsim builds at most {MAX_TIERS} tiers",
                            t + 1
                        ),
                    ));
                }
                tier[(x - sw_base) as usize] = t + 1;
                queue.push(x);
            }
        }
    }
    if let Some(i) = tier.iter().position(|&t| t == u8::MAX) {
        let x = sw_base + i as u32;
        if g.adj(x).is_empty() {
            return Err(isolated(x));
        }
        return Err(e(
            first_line(&g, x, sl),
            format!("switch {x} is not reachable from the GPUs"),
        ));
    }
    for c in &g.cables {
        if c.a >= sw_base && c.b >= sw_base {
            let (ta, tb) = (
                tier[(c.a - sw_base) as usize],
                tier[(c.b - sw_base) as usize],
            );
            if ta.abs_diff(tb) != 1 {
                return Err(e(
                    c.line,
                    format!(
                        "switches {} (tier {ta}) and {} (tier {tb}) are not on adjacent tiers \
                         (tier 0: the switches the GPUs link to; tier t + 1: those linked to \
                         tier t)",
                        c.a, c.b
                    ),
                ));
            }
        }
    }
    g.tier = tier;
    Ok(g)
}

/// Emits the checked graph through the Builder: hosts' links (network, then scale-up), then
/// network switches by tier and file id, then NVSwitches.
fn build(g: &Graph, name: &str) -> Result<Topology, ConfigError> {
    let head = g.head;
    let (gpus, nv, nsw) = (head.gpus(), head.nv, head.sw as usize);
    let sw_base = g.sw_base();
    // SwitchIds: network switches by (tier, file id), then the NVSwitches.
    let mut order: Vec<u32> = (0..head.sw).collect();
    order.sort_by_key(|&s| (g.tier[s as usize], s));
    let mut sid = vec![0u32; nsw];
    let mut index = vec![0u32; nsw];
    let mut per_tier = [0u32; MAX_TIERS];
    for (i, &s) in order.iter().enumerate() {
        let t = g.tier[s as usize] as usize;
        sid[s as usize] = i as u32;
        index[s as usize] = per_tier[t];
        per_tier[t] += 1;
    }
    let nv_sid = |id: u32| SwitchId(nsw as u32 + id - gpus);
    // Each network switch's least host below (tiers ascending, so children come first).
    let mut least = vec![u32::MAX; nsw];
    for &s in &order {
        let t = g.tier[s as usize];
        let mut m = u32::MAX;
        for &(x, _) in g.adj(sw_base + s) {
            if t == 0 && x < gpus {
                m = m.min(x);
            } else if x >= sw_base && g.tier[(x - sw_base) as usize] + 1 == t {
                m = m.min(least[(x - sw_base) as usize]);
            }
        }
        least[s as usize] = m;
    }
    let params = |c: u32| {
        let c = &g.cables[c as usize];
        LinkParams {
            rate: c.rate,
            latency: c.latency,
            switch_latency: SimTime::ZERO,
        }
    };
    // Host h's links: network ones by SwitchId, then its NVSwitches'.
    let host_links = |h: u32| {
        let mut net: Vec<(u32, u32)> = Vec::new();
        let mut up: Vec<(u32, u32)> = Vec::new();
        for &(x, c) in g.adj(h) {
            if x >= sw_base {
                net.push((sid[(x - sw_base) as usize], c));
            } else {
                up.push((nv_sid(x).0, c));
            }
        }
        net.sort_unstable();
        up.sort_unstable();
        (net, up)
    };
    let host_rate = g.cables[host_links(0).0[0].1 as usize].rate;
    let mut b = Builder::new(gpus, host_rate, TIER_NAMES);
    let file = Path::new(name)
        .file_name()
        .map_or_else(|| name.to_string(), |f| f.to_string_lossy().into_owned());
    b.label(format!(
        "simai {file}: {gpus} GPUs ({} per server), {nv} NVSwitches, {} switches",
        head.gps, head.sw
    ));
    for h in 0..gpus {
        let (net, up) = host_links(h);
        for (s, c) in net.into_iter().chain(up) {
            b.link(
                params(c),
                NodeId::Host(HostId(h)),
                NodeId::Switch(SwitchId(s)),
            );
        }
    }
    for &s in &order {
        let t = g.tier[s as usize];
        b.switch(t, index[s as usize]);
        let me = NodeId::Switch(SwitchId(sid[s as usize]));
        // Down neighbours by (least host below, id); up ones by SwitchId.
        let mut down: Vec<(u32, u32, NodeId, u32)> = Vec::new();
        let mut up: Vec<(u32, u32)> = Vec::new();
        for &(x, c) in g.adj(sw_base + s) {
            if x < gpus {
                down.push((x, x, NodeId::Host(HostId(x)), c));
            } else {
                let o = (x - sw_base) as usize;
                if g.tier[o] + 1 == t {
                    down.push((least[o], sid[o], NodeId::Switch(SwitchId(sid[o])), c));
                } else {
                    up.push((sid[o], c));
                }
            }
        }
        down.sort_unstable_by_key(|d| (d.0, d.1));
        up.sort_unstable();
        for (_, _, to, c) in down {
            b.link(params(c), me, to);
        }
        for (to, c) in up {
            b.link(params(c), me, NodeId::Switch(SwitchId(to)));
        }
    }
    for k in 0..nv {
        b.switch(SCALE_UP, k);
        let me = NodeId::Switch(nv_sid(gpus + k));
        for &(x, c) in g.adj(gpus + k) {
            b.link(params(c), me, NodeId::Host(HostId(x)));
        }
    }
    b.finish().map_err(|m| ConfigError::Trace {
        path: name.to_string(),
        line: 0,
        msg: format!("lbsim cannot build this fabric: {m}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simai_topo_rates() {
        let r = |s: &str| rate(s).map(|b| b.0);
        assert_eq!(r("400Gbps"), Ok(400_000_000_000));
        assert_eq!(r("2880Gbps"), Ok(2_880_000_000_000));
        assert_eq!(r("1.6Tbps"), Ok(1_600_000_000_000));
        assert_eq!(r("100gbps"), Ok(100_000_000_000));
        assert_eq!(r("25MBPS"), Ok(25_000_000));
        assert_eq!(r("1Kbps"), Ok(1_000));
        assert_eq!(r("1500bps"), Ok(1_500));
        assert_eq!(r("0.1Gbps"), Ok(100_000_000));
        assert_eq!(r(".5Gbps"), Ok(500_000_000));
        assert_eq!(r("2.e2Gbps"), Ok(200_000_000_000));
        assert_eq!(r("4e2Gbps"), Ok(400_000_000_000));
        assert_eq!(r("1000000Tbps"), Ok(1_000_000_000_000_000_000));
        assert_eq!(r("1234.5678bps"), Ok(1_235));
        for bad in [
            "400",
            "Gbps",
            "400Gb",
            "0Gbps",
            "-1Gbps",
            "0.0Tbps",
            "1.2.3Gbps",
            "1e400Gbps",
            "2000000Tbps",
            "999bps",
            "0.5Kbps",
            "infGbps",
            "NaNGbps",
            "1e-30Gbps",
            "x1Gbps",
            "é",
        ] {
            assert!(rate(bad).is_err(), "{bad}");
        }
        assert!(rate("400").unwrap_err().contains("no unit"));
        assert!(rate("0Gbps").unwrap_err().contains("not positive"));
        assert!(rate("-3Gbps").unwrap_err().contains("not positive"));
    }

    #[test]
    fn simai_topo_latencies() {
        let l = |s: &str| latency(s).map(|t| t.ps());
        assert_eq!(l("0.000025ms"), Ok(25_000));
        assert_eq!(l("0.0005ms"), Ok(500_000));
        assert_eq!(l("0.001ms"), Ok(1_000_000));
        assert_eq!(l("1us"), Ok(1_000_000));
        assert_eq!(l("2.5US"), Ok(2_500_000));
        assert_eq!(l("100ns"), Ok(100_000));
        assert_eq!(l("7ps"), Ok(7));
        assert_eq!(l("0s"), Ok(0));
        assert_eq!(l("0ms"), Ok(0));
        assert_eq!(l("-0ns"), Ok(0));
        assert_eq!(l("0.5s"), Ok(500_000_000_000));
        assert_eq!(l("2.5e-5ms"), Ok(25_000));
        assert_eq!(l("0.0000000001ns"), Ok(0));
        assert_eq!(l("1.4ps"), Ok(1));
        assert_eq!(l("1.5ps"), Ok(2));
        assert_eq!(
            l("0.000025000000000000000000000000000000000000001ms"),
            Ok(25_000)
        );
        for bad in [
            "1", "ms", "-1ns", "1s", "2s", "1e12ms", "infms", "nanms", "1min", "1h", "1.0.0us",
            "1e", "1e+ns", "5 ms",
        ] {
            assert!(latency(bad).is_err(), "{bad}");
        }
        assert!(latency("1").unwrap_err().contains("no unit"));
        assert!(latency("-1ns").unwrap_err().contains("negative"));
    }

    #[test]
    fn simai_topo_error_rates() {
        for ok in ["0", "0.0", "-0", ".0", "0e5"] {
            assert!(error_rate(ok).is_ok(), "{ok}");
        }
        assert!(error_rate("0.01").unwrap_err().contains("flaky"));
        assert!(error_rate("1e-9").unwrap_err().contains("flaky"));
        assert!(error_rate("none").unwrap_err().contains("not a number"));
    }

    /// Four GPUs, two per server, one NVSwitch per server (4, 5), two leaves (6, 7), one spine
    /// (8). Lines: 1 header, 2 switch ids, 3-6 NVSwitch links, 7-10 GPU-leaf, 11-12 leaf-spine.
    const BASE: &str = "9 2 2 3 10 H100
4 5 6 7 8 
0 4 2880Gbps 0.000025ms 0
1 4 2880Gbps 0.000025ms 0
2 5 2880Gbps 0.000025ms 0
3 5 2880Gbps 0.000025ms 0
0 6 400Gbps 0.0005ms 0
1 6 400Gbps 0.0005ms 0
2 7 400Gbps 0.0005ms 0
3 7 400Gbps 0.0005ms 0
6 8 400Gbps 0.0005ms 0
7 8 400Gbps 0.0005ms 0
";

    /// BASE with 1-based line `n` replaced by `with` (None: removed).
    fn edit(n: usize, with: Option<&str>) -> String {
        let mut v: Vec<String> = BASE.lines().map(str::to_string).collect();
        match with {
            Some(w) => v[n - 1] = w.to_string(),
            None => {
                v.remove(n - 1);
            }
        }
        v.join("\n") + "\n"
    }

    /// BASE with `extra` appended and the header's link count raised by `more`.
    fn plus(extra: &str, more: u32) -> String {
        let t = BASE.replacen("9 2 2 3 10 H100", &format!("9 2 2 3 {} H100", 10 + more), 1);
        t + extra
    }

    fn refused(text: &str, line: usize, needle: &str) {
        match read(text, "t.topo") {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(ConfigError::Trace { path, line: l, msg }) => {
                assert_eq!(path, "t.topo");
                assert_eq!((l, msg.contains(needle)), (line, true), "{msg}\n{text}");
            }
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn simai_topo_reads_the_base_graph() {
        let g = read(BASE, "t").unwrap();
        assert_eq!(g.head.gpus(), 4);
        assert_eq!(g.tier, vec![0, 0, 1]);
        assert_eq!(g.cables[0].latency, SimTime(25_000));
        assert_eq!(size(BASE), Some((4, 20)));
        // CRLF, blank lines and a missing trailing newline are fine.
        let crlf = BASE.replace('\n', "\r\n\r\n");
        assert_eq!(read(crlf.trim_end(), "t").unwrap().cables.len(), 10);
        let t = parse(BASE, "dir/t.topo").unwrap();
        assert_eq!(t.hosts, 4);
        assert_eq!(t.tiers(), 2);
        assert_eq!(
            t.describe(),
            "simai t.topo: 4 GPUs (2 per server), 2 NVSwitches, 3 switches"
        );
    }

    #[test]
    fn simai_topo_header_defects() {
        refused("", 1, "empty file");
        refused("\n\n", 1, "empty file");
        refused("9 2 2 3 10\n", 1, "lacks `gpu_type`");
        refused("9 2 2\n", 1, "lacks `switch_count`");
        refused("9 x 2 3 10 H100\n", 1, "`x` is not");
        refused("9 2 2 3 -10 H100\n", 1, "`-10` is not");
        refused("9 2 2 3 10 H100 extra\n", 1, "extra token `extra`");
        refused("16777216 2 2 3 10 H100\n", 1, "2^24");
        refused("9 2 2 3 67108864 H100\n", 1, "2^26");
        refused("9 2 5 5 10 H100\n", 1, "exceed node_count");
        refused("4 2 0 3 10 H100\n", 1, "at least 2");
        refused("9 2 5 0 10 H100\n", 1, "switch_count 0");
        refused("9 0 2 3 10 H100\n", 1, "does not divide");
        refused("9 3 2 3 10 H100\n", 1, "does not divide");
        refused("9 2 3 2 10 H100\n", 1, "whole number per server");
        refused("9 2 2 3 10 H100\n", 2, "missing the line of switch ids");
        assert_eq!(size("9 2 2 3 10 H100 extra"), None);
        assert_eq!(size("no header"), None);
        assert_eq!(
            size("\n 16777215 1 0 1 67108863 x\n"),
            Some((16777214, 134217726))
        );
    }

    #[test]
    fn simai_topo_switch_line_defects() {
        refused(&edit(2, Some("4 5 6 7")), 2, "4 switch ids");
        refused(&edit(2, Some("4 5 6 7 8 9")), 2, "extra token `9`");
        refused(&edit(2, Some("4 5 6 7 x")), 2, "`x` is not");
        refused(&edit(2, Some("6 5 4 7 8")), 2, "NVSwitch ids");
        refused(&edit(2, Some("4 5 6 7 3")), 2, "3 is out of place");
        refused(
            &edit(2, Some("4 5 6 6 8")),
            2,
            "6 is out of place or repeated",
        );
        refused(&edit(2, Some("4 5 6 7 9 ")), 2, "8 is missing");
        // Any order within each group is the same file.
        let t = edit(2, Some("5 4 8 6 7"));
        assert_eq!(read(&t, "t").unwrap().tier, vec![0, 0, 1]);
    }

    #[test]
    fn simai_topo_link_defects() {
        refused(
            &edit(3, Some("0 4 2880Gbps 0.000025ms")),
            3,
            "lacks `error_rate`",
        );
        refused(
            &edit(3, Some("0 4 2880Gbps 0.000025ms 0 x")),
            3,
            "extra token `x`",
        );
        refused(
            &edit(3, Some("0 9 2880Gbps 0.000025ms 0")),
            3,
            "out of range",
        );
        refused(&edit(3, Some("0 a 2880Gbps 0.000025ms 0")), 3, "`a` is not");
        refused(&edit(3, Some("4 4 2880Gbps 0.000025ms 0")), 3, "to itself");
        refused(
            &edit(3, Some("0 1 2880Gbps 0.000025ms 0")),
            3,
            "between GPUs",
        );
        refused(&edit(3, Some("4 6 2880Gbps 0.000025ms 0")), 3, "GPUs only");
        refused(&edit(3, Some("4 5 2880Gbps 0.000025ms 0")), 3, "GPUs only");
        refused(
            &edit(3, Some("0 5 2880Gbps 0.000025ms 0")),
            3,
            "own server's",
        );
        refused(&edit(3, Some("0 4 2880 0.000025ms 0")), 3, "no unit");
        refused(&edit(3, Some("0 4 0Gbps 0.000025ms 0")), 3, "not positive");
        refused(&edit(3, Some("0 4 2880Gbps 25 0")), 3, "no unit");
        refused(&edit(3, Some("0 4 2880Gbps -1ns 0")), 3, "negative");
        refused(&edit(3, Some("0 4 2880Gbps 1e999ms 0")), 3, "below 1 s");
        refused(&edit(3, Some("0 4 2880Gbps 0.000025ms 0.001")), 3, "flaky");
        refused(&plus("0 7 400Gbps 0.0005ms 0\n", 0), 13, "more link lines");
        refused(&edit(12, None), 1, "link_count 10 but the file has 9");
    }

    #[test]
    fn simai_topo_graph_defects() {
        // A GPU without a network link (its leaf link becomes an NVSwitch's).
        let t = edit(7, None).replacen(" 10 H100", " 9 H100", 1);
        refused(&t, 3, "GPU 0 has no link to a network switch");
        // A GPU without its NVSwitch link.
        let t = edit(3, None).replacen(" 10 H100", " 9 H100", 1);
        refused(&t, 6, "GPU 0 has no link to NVSwitch 4");
        // A repeated cable (either direction).
        refused(&plus("8 6 400Gbps 0.0005ms 0\n", 1), 13, "a second link");
        // A switch the GPUs cannot reach, and one with no links at all.
        let t = "10 2 2 4 11 H100\n4 5 6 7 8 9\n".to_string()
            + &BASE.lines().skip(2).collect::<Vec<_>>().join("\n")
            + "\n9 9 400Gbps 1ns 0\n";
        refused(&t, 13, "to itself");
        let t = t
            .replace("9 9 400Gbps", "8 9 400Gbps")
            .replace("7 8 400", "7 9 400");
        // 6-8, 7-9, 8-9: 8 and 9 both tier 1, linked to each other.
        refused(&t, 13, "not on adjacent tiers");
        let t = "10 2 2 4 10 H100\n4 5 6 7 8 9\n".to_string()
            + &BASE.lines().skip(2).collect::<Vec<_>>().join("\n");
        refused(&t, 2, "switch 9 has no links");
        let t = "11 2 2 5 11 H100\n4 5 6 7 8 9 10\n".to_string()
            + &BASE.lines().skip(2).collect::<Vec<_>>().join("\n")
            + "\n9 10 1Gbps 1ns 0\n";
        refused(&t, 13, "switch 9 is not reachable");
        // Leaf to leaf.
        refused(
            &plus("6 7 400Gbps 0.0005ms 0\n", 1),
            13,
            "not on adjacent tiers",
        );
        // A GPU on a spine makes it tier 0, and the leaf-spine links same-tier.
        refused(
            &plus("0 8 400Gbps 0.0005ms 0\n", 1),
            11,
            "not on adjacent tiers",
        );
    }

    #[test]
    fn simai_topo_tiers_cap() {
        // GPUs 0-1 (one server, no NVSwitch) on leaf 2; a chain 2-3-4-5 (tiers 0-3) is fine,
        // 2-3-4-5-6 is five tiers.
        let chain = |n: u32| {
            let mut t = format!("{} 2 0 {n} {} x\n", 2 + n, n + 1);
            t += &(2..2 + n).map(|i| format!("{i} ")).collect::<String>();
            t += "\n0 2 1Gbps 1ns 0\n1 2 1Gbps 1ns 0\n";
            for i in 2..1 + n {
                t += &format!("{i} {} 1Gbps 1ns 0\n", i + 1);
            }
            t
        };
        assert_eq!(read(&chain(4), "t").unwrap().tier, vec![0, 1, 2, 3]);
        refused(&chain(5), 8, "at most 4 tiers");
    }

    #[test]
    fn simai_topo_never_panics_on_mangled_input() {
        // Every prefix of the base file, and every line swapped for a few odd tokens.
        for i in 0..BASE.len() {
            let _ = read(&BASE[..i], "t");
            let _ = size(&BASE[..i]);
        }
        for n in 1..=12 {
            for w in [
                "",
                "0",
                "-",
                "18446744073709551616 0",
                "0 0 0 0 0 0",
                "\u{fe0f}",
            ] {
                let _ = read(&edit(n, Some(w)), "t");
            }
        }
        let _ = read("16777215 1 0 1 67108863 x\n16777214\n", "t");
        let _ = read("3 1 0 1 1 x\n2\n0 2 1Gbps 1ns 0\n", "t");
    }
}
