//! Import and export of htsim's connection-matrix text format:
//!
//! ```text
//! Nodes 16
//! Connections 3
//! Triggers 1
//! # comment
//! 0->5 id 1 start 0 size 2097152 recv_done_trigger 1
//! 3->1 id 2 start 1000000 size 65536 recv_done_trigger 1
//! 5->3 id 3 trigger 1 size 65536
//! trigger id 1 barrier count 2
//! ```
//! Start times are picoseconds. A flow with `trigger TID` waits for that trigger (its `start`
//! is ignored); `recv_done_trigger TID` activates a trigger when the flow's receiver holds the
//! whole message, `send_done_trigger TID` when its sender learns so. Triggers are `oneshot`
//! (fires on the first activation), `multishot` (each activation starts the next target) or `barrier`
//! (fires once after `count N` activations; default: as many as feed it). lbsim extensions:
//! a trigger line may add `delay PS` (its targets start that much later), and a flow may name
//! several triggers of each kind.
//!
//! The Ultra Ethernet fork of htsim adds, and lbsim reads: `msg [M]` on a flow line (one
//! message of a reused connection: every line of connection `id C` with `msg` is its own flow
//! between the same two hosts, all keeping id C); `prio P` (accepted only when every flow has
//! the same priority, htsim's default being 2000000: lbsim's queues have no priority classes
//! for data); and a `Failures N` header with `failure switch_type AGG switch_id S link_id L`
//! lines, each failing uplink L of aggregation switch S (a fat-tree's `agg:S-core:C` cable)
//! from the start of the run. Other switch types are refused, as htsim refuses them.
//!
//! A flow keeps its `id` (flows.csv's `flow_id`); a flow without one takes its position among
//! the flows (1, 2, ...), and no two flows may share an id, given or taken (but the messages
//! of one connection).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::{Dependencies, FlowSpec, Trigger};
use crate::config::{limits, ConfigError};
use crate::ids::HostId;
use crate::time::SimTime;

/// A parsed connection matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    pub flows: Vec<FlowSpec>,
    pub deps: Dependencies,
    /// Each flow's id in the file (its position, 1, 2, ..., if it has none).
    pub ids: Vec<u64>,
    /// `failure` lines: (aggregation switch, uplink, line).
    pub failures: Vec<(u32, u32, usize)>,
}

/// htsim's priority of a flow without `prio`.
pub const DEFAULT_PRIO: u64 = 2_000_000;

/// Reads a connection matrix for a topology of `hosts` hosts and packets of `payload_bytes`
/// (each flow's size is checked against [`limits::MESSAGE_PACKETS`]).
pub fn load(path: &Path, hosts: u32, payload_bytes: u32) -> Result<Matrix, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.display().to_string(),
        msg: format!("cannot read connection matrix: {e}"),
    })?;
    parse(&text, &path.display().to_string(), hosts, payload_bytes)
}

/// A trigger reference on a flow line: (trigger id, line).
type Refs = Vec<(u64, usize)>;

#[derive(Default)]
struct FlowRefs {
    gate: Refs,
    recv: Refs,
    send: Refs,
    line: usize,
}

/// The fields a flow line may have after `SRC->DST`.
const FLOW_FIELDS: &str =
    "id, start, size, trigger, recv_done_trigger, send_done_trigger, msg, prio";

/// Parses connection-matrix `text`; `name` is used in error messages. Errors name the line;
/// line 0 is the file as a whole (empty, or no connections).
pub fn parse(
    text: &str,
    name: &str,
    hosts: u32,
    payload_bytes: u32,
) -> Result<Matrix, ConfigError> {
    let err = |line: usize, msg: String| ConfigError::Trace {
        path: name.to_string(),
        line,
        msg,
    };
    let mut nodes: Option<u32> = None;
    let mut connections: Option<(usize, usize)> = None;
    let mut trigger_count: Option<(usize, usize)> = None;
    let mut flows = Vec::new();
    let mut refs: Vec<FlowRefs> = Vec::new();
    // Flow id -> line, and each flow's id if it has one.
    let mut ids: BTreeMap<u64, usize> = BTreeMap::new();
    let mut given: Vec<Option<u64>> = Vec::new();
    let mut empty = true;
    let mut failure_count: Option<(usize, usize)> = None;
    let mut failures: Vec<(u32, u32, usize)> = Vec::new();
    // The first flow's priority and line; connection id -> (src, dst) of its messages.
    let mut prio: Option<(u64, usize)> = None;
    let mut conns: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
    let mut msg_ids: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
    // Trigger id -> (index, line, kind, count, delay).
    let mut trig: BTreeMap<u64, (usize, usize, &str, Option<u64>, u64)> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            if !raw.trim().is_empty() {
                empty = false;
            }
            continue;
        }
        empty = false;
        let toks: Vec<&str> = line.split_whitespace().collect();
        match toks[0] {
            "Nodes" => {
                let n = number(&toks, 1, "Nodes").map_err(|m| err(ln, m))?;
                if n > hosts as u64 {
                    return Err(err(
                        ln,
                        format!("Nodes {n} but the topology has only {hosts} hosts"),
                    ));
                }
                if n < 2 {
                    return Err(err(
                        ln,
                        format!("Nodes {n}: a flow needs two nodes, so at least 2"),
                    ));
                }
                nodes = Some(n as u32);
                continue;
            }
            "Connections" => {
                let n = number(&toks, 1, "Connections").map_err(|m| err(ln, m))?;
                connections = Some((n as usize, ln));
                continue;
            }
            "Triggers" => {
                let n = number(&toks, 1, "Triggers").map_err(|m| err(ln, m))?;
                trigger_count = Some((n as usize, ln));
                continue;
            }
            "Failures" => {
                let n = number(&toks, 1, "Failures").map_err(|m| err(ln, m))?;
                failure_count = Some((n as usize, ln));
                continue;
            }
            "failure" => {
                let (mut kind, mut sw, mut link) = (None, None, None);
                let mut k = 1;
                while k < toks.len() {
                    match toks[k] {
                        "switch_type" => {
                            let t = toks.get(k + 1).copied().unwrap_or("");
                            match t {
                                "AGG" => kind = Some(t),
                                "TOR" | "CORE" => {
                                    return Err(err(
                                        ln,
                                        format!(
                                            "switch_type {t}: only aggregation switches' uplinks \
                                             can fail here (as in htsim); name the link in \
                                             [[failures]] instead"
                                        ),
                                    ))
                                }
                                _ => {
                                    return Err(err(
                                        ln,
                                        format!(
                                            "switch_type must be TOR, AGG or CORE, found `{t}`"
                                        ),
                                    ))
                                }
                            }
                        }
                        "switch_id" => {
                            sw = Some(number(&toks, k + 1, "switch_id").map_err(|m| err(ln, m))?)
                        }
                        "link_id" => {
                            link = Some(number(&toks, k + 1, "link_id").map_err(|m| err(ln, m))?)
                        }
                        other => {
                            return Err(err(
                                ln,
                                format!(
                                    "unknown failure attribute `{other}` (a failure has \
                                     switch_type, switch_id, link_id)"
                                ),
                            ))
                        }
                    }
                    k += 2;
                }
                let (Some(_), Some(sw), Some(link)) = (kind, sw, link) else {
                    return Err(err(
                        ln,
                        "a failure needs switch_type AGG, switch_id S and link_id L".into(),
                    ));
                };
                let (Ok(sw), Ok(link)) = (u32::try_from(sw), u32::try_from(link)) else {
                    return Err(err(ln, "switch_id or link_id out of range".into()));
                };
                failures.push((sw, link, ln));
                continue;
            }
            "trigger" => {
                if toks.get(1) != Some(&"id") {
                    return Err(err(
                        ln,
                        "expected `trigger id K oneshot|multishot|barrier`".into(),
                    ));
                }
                let id = number(&toks, 2, "id").map_err(|m| err(ln, m))?;
                let kind = match toks.get(3).copied() {
                    Some(k @ ("oneshot" | "multishot" | "barrier")) => k,
                    other => {
                        return Err(err(
                            ln,
                            format!(
                                "trigger type must be oneshot, multishot or barrier, found `{}`",
                                other.unwrap_or("")
                            ),
                        ))
                    }
                };
                let (mut count, mut delay) = (None, 0);
                let mut k = 4;
                while k < toks.len() {
                    let v = number(&toks, k + 1, toks[k]).map_err(|m| err(ln, m))?;
                    match toks[k] {
                        "count" if kind != "oneshot" && v >= 1 => count = Some(v),
                        "count" => {
                            return Err(err(
                                ln,
                                "`count` must be at least 1 and is not for oneshot triggers".into(),
                            ))
                        }
                        "delay" => {
                            limits::check_time(v).map_err(|m| err(ln, format!("`delay`: {m}")))?;
                            delay = v
                        }
                        other => return Err(err(ln, format!("unknown trigger field `{other}`"))),
                    }
                    k += 2;
                }
                let idx = trig.len();
                if let Some(first) = trig.get(&id) {
                    return Err(err(
                        ln,
                        format!(
                            "duplicate trigger id {id} (first defined on line {})",
                            first.1
                        ),
                    ));
                }
                trig.insert(id, (idx, ln, kind, count, delay));
                continue;
            }
            _ => {}
        }
        let (s, d) = toks[0].split_once("->").ok_or_else(|| {
            err(
                ln,
                format!(
                    "unknown token `{}`: a line is a header (`Nodes N`, `Connections C`, \
                     `Triggers T`), a flow (`SRC->DST ...`), a `trigger id K ...` or a `#` comment",
                    toks[0]
                ),
            )
        })?;
        let limit = nodes.unwrap_or(hosts);
        let node = |t: &str| -> Result<u32, ConfigError> {
            let v: u32 = t
                .parse()
                .map_err(|_| err(ln, format!("node `{t}` is not a number")))?;
            if v >= limit {
                return Err(err(
                    ln,
                    format!("node {v} out of range (valid: 0..{})", limit - 1),
                ));
            }
            Ok(v)
        };
        let (src, dst) = (node(s)?, node(d)?);
        if src == dst {
            return Err(err(ln, format!("flow from node {src} to itself")));
        }
        let mut size = None;
        let mut start = 0u64;
        let mut id = None;
        let mut r = FlowRefs {
            line: ln,
            ..FlowRefs::default()
        };
        let msg = toks[1..].contains(&"msg");
        let mut flow_prio = DEFAULT_PRIO;
        let mut k = 1;
        while k < toks.len() {
            let key = toks[k];
            if key == "msg" {
                // `msg` may carry a message number (htsim reads one if it parses).
                let numbered = toks.get(k + 1).is_some_and(|t| t.parse::<u64>().is_ok());
                k += if numbered { 2 } else { 1 };
                continue;
            }
            let val = number(&toks, k + 1, key).map_err(|m| err(ln, m))?;
            match key {
                "id" => {
                    if id.is_some() {
                        return Err(err(ln, "a flow has one `id`".into()));
                    }
                    if msg {
                        match conns.get(&val) {
                            Some(&c) if c != (src, dst) => {
                                return Err(err(
                                    ln,
                                    format!(
                                        "message of connection {val}, which runs {}->{}: a \
                                         connection's messages share its two hosts",
                                        c.0, c.1
                                    ),
                                ))
                            }
                            _ => {
                                conns.insert(val, (src, dst));
                            }
                        }
                    }
                    match ids.get(&val) {
                        Some(&first) if !(msg && msg_ids.contains(&val)) => {
                            return Err(err(
                                ln,
                                format!("duplicate flow id {val} (also on line {first})"),
                            ));
                        }
                        Some(_) => {}
                        None => {
                            ids.insert(val, ln);
                            if msg {
                                msg_ids.insert(val);
                            }
                        }
                    }
                    id = Some(val);
                }
                "prio" => flow_prio = val,
                "start" => {
                    limits::check_time(val).map_err(|m| err(ln, format!("`start`: {m}")))?;
                    start = val
                }
                "size" => size = Some(val),
                "trigger" => r.gate.push((val, ln)),
                "recv_done_trigger" => r.recv.push((val, ln)),
                "send_done_trigger" => r.send.push((val, ln)),
                other => {
                    return Err(err(
                        ln,
                        format!("unknown flow field `{other}` (a flow has {FLOW_FIELDS})"),
                    ))
                }
            }
            k += 2;
        }
        match prio {
            None => prio = Some((flow_prio, ln)),
            Some((p, l)) if p != flow_prio => {
                return Err(err(
                    ln,
                    format!(
                        "`prio` {flow_prio}, but the flow on line {l} has priority {p}: lbsim's \
                         queues have no priority classes for data, so flows of different \
                         priorities cannot be told apart (htsim's default is {DEFAULT_PRIO})"
                    ),
                ))
            }
            _ => {}
        }
        if msg && id.is_none() {
            return Err(err(
                ln,
                "a `msg` line needs the `id` of its connection".into(),
            ));
        }
        let size = size.ok_or_else(|| err(ln, "missing `size B`".into()))?;
        if size == 0 {
            return Err(err(ln, "size must be positive".into()));
        }
        limits::check_message(size, payload_bytes).map_err(|m| err(ln, format!("`size`: {m}")))?;
        flows.push(FlowSpec {
            src: HostId(src),
            dst: HostId(dst),
            size_bytes: size,
            start: SimTime(start),
        });
        refs.push(r);
        given.push(id);
    }
    if let Some((n, ln)) = connections {
        if n != flows.len() {
            return Err(err(
                ln,
                format!(
                    "header says {n} connections but {} were listed",
                    flows.len()
                ),
            ));
        }
    }
    if let Some((n, ln)) = trigger_count {
        if n != trig.len() {
            return Err(err(
                ln,
                format!("header says {n} triggers but {} were defined", trig.len()),
            ));
        }
    }
    if let Some((n, ln)) = failure_count {
        if n != failures.len() {
            return Err(err(
                ln,
                format!(
                    "header says {n} failures but {} were listed",
                    failures.len()
                ),
            ));
        }
    } else if let Some(f) = failures.first() {
        return Err(err(
            f.2,
            "a `failure` line needs a `Failures N` header".into(),
        ));
    }
    if empty {
        return Err(err(0, "empty file: no connections".into()));
    }
    if flows.is_empty() {
        return Err(err(
            0,
            "no connections: the file has no `SRC->DST ...` flow line".into(),
        ));
    }
    let mut out = Vec::with_capacity(flows.len());
    for (i, id) in given.iter().enumerate() {
        let id = match *id {
            Some(id) => id,
            None => {
                let pos = i as u64 + 1;
                if let Some(other) = ids.get(&pos) {
                    return Err(err(
                        refs[i].line,
                        format!(
                            "this flow has no `id`, so it takes its position, {pos}, but the flow \
                             on line {other} has id {pos}; give this flow an id"
                        ),
                    ));
                }
                pos
            }
        };
        out.push(id);
    }
    let deps = resolve_triggers(&flows, &refs, &trig, &err)?;
    Ok(Matrix {
        flows,
        deps,
        ids: out,
        failures,
    })
}

type TrigDefs<'a> = BTreeMap<u64, (usize, usize, &'a str, Option<u64>, u64)>;

/// Turns trigger references into [`Dependencies`]; rejects undefined ids, triggers that can
/// never fire, and cycles.
fn resolve_triggers(
    flows: &[FlowSpec],
    refs: &[FlowRefs],
    trig: &TrigDefs,
    err: &dyn Fn(usize, String) -> ConfigError,
) -> Result<Dependencies, ConfigError> {
    if trig.is_empty()
        && refs
            .iter()
            .all(|r| r.gate.is_empty() && r.recv.is_empty() && r.send.is_empty())
    {
        return Ok(Dependencies::default());
    }
    let n = flows.len();
    let mut triggers = vec![Trigger::default(); trig.len()];
    let mut lines = vec![0; trig.len()];
    for &(idx, ln, kind, _, delay) in trig.values() {
        triggers[idx].multishot = kind == "multishot";
        triggers[idx].delay = SimTime(delay);
        lines[idx] = ln;
    }
    let lookup = |(id, ln): (u64, usize)| -> Result<u32, ConfigError> {
        trig.get(&id).map(|t| t.0 as u32).ok_or_else(|| {
            err(
                ln,
                format!("undefined trigger id {id} (no `trigger id {id}` line)"),
            )
        })
    };
    let mut deps = Dependencies {
        on_recv_done: vec![Vec::new(); n],
        on_send_done: vec![Vec::new(); n],
        gated: vec![false; n],
        ..Dependencies::default()
    };
    let mut feeders = vec![0u64; trig.len()];
    for (f, r) in refs.iter().enumerate() {
        for &g in &r.gate {
            let t = lookup(g)?;
            triggers[t as usize].targets.push(f as u32);
            deps.gated[f] = true;
        }
        for &x in &r.recv {
            let t = lookup(x)?;
            deps.on_recv_done[f].push(t);
            feeders[t as usize] += 1;
        }
        for &x in &r.send {
            let t = lookup(x)?;
            deps.on_send_done[f].push(t);
            feeders[t as usize] += 1;
        }
    }
    for (&id, &(idx, ln, kind, count, _)) in trig {
        let needed = match (kind, count) {
            (_, Some(c)) => c,
            ("barrier", None) => feeders[idx].max(1),
            _ => 1,
        };
        if needed > feeders[idx] && !triggers[idx].targets.is_empty() {
            return Err(err(
                ln,
                format!(
                    "trigger {id} needs {needed} activation(s) but only {} flow field(s) feed it",
                    feeders[idx]
                ),
            ));
        }
        triggers[idx].needed = needed as u32;
    }
    // A cycle among flows (f's completion feeds a trigger that starts g) would never start.
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (f, out) in succ.iter_mut().enumerate() {
        for &t in deps.on_recv_done[f].iter().chain(&deps.on_send_done[f]) {
            out.extend_from_slice(&triggers[t as usize].targets);
        }
    }
    let mut indeg = vec![0u32; n];
    for s in &succ {
        for &g in s {
            indeg[g as usize] += 1;
        }
    }
    let mut stack: Vec<usize> = (0..n).filter(|&f| indeg[f] == 0).collect();
    let mut seen = 0;
    while let Some(f) = stack.pop() {
        seen += 1;
        for &g in &succ[f] {
            indeg[g as usize] -= 1;
            if indeg[g as usize] == 0 {
                stack.push(g as usize);
            }
        }
    }
    if seen < n {
        let f = (0..n)
            .find(|&f| indeg[f] > 0)
            .expect("a flow on or after a cycle");
        return Err(err(
            refs[f].line,
            "trigger cycle: this flow waits, through triggers, on its own completion".into(),
        ));
    }
    deps.triggers = triggers;
    Ok(deps.normalized())
}

/// Writes flows and their dependencies in the format [`parse`] reads. Flow `i` gets id
/// `ids[i]` (with `ids` empty, as for generated workloads: i + 1, since htsim reserves 0);
/// trigger ids count from 1.
pub fn write(flows: &[FlowSpec], deps: &Dependencies, ids: &[u64], nodes: u32) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Nodes {nodes}");
    let _ = writeln!(o, "Connections {}", flows.len());
    if !deps.triggers.is_empty() {
        let _ = writeln!(o, "Triggers {}", deps.triggers.len());
    }
    let mut gates: Vec<Vec<u32>> = vec![Vec::new(); flows.len()];
    for (t, tr) in deps.triggers.iter().enumerate() {
        for &f in &tr.targets {
            gates[f as usize].push(t as u32 + 1);
        }
    }
    for (i, f) in flows.iter().enumerate() {
        let id = ids.get(i).copied().unwrap_or(i as u64 + 1);
        let _ = write!(o, "{}->{} id {id}", f.src.0, f.dst.0);
        if deps.gated(i) {
            for t in &gates[i] {
                let _ = write!(o, " trigger {t}");
            }
        } else {
            let _ = write!(o, " start {}", f.start.ps());
        }
        let _ = write!(o, " size {}", f.size_bytes);
        for t in deps.on_send_done.get(i).into_iter().flatten() {
            let _ = write!(o, " send_done_trigger {}", t + 1);
        }
        for t in deps.on_recv_done.get(i).into_iter().flatten() {
            let _ = write!(o, " recv_done_trigger {}", t + 1);
        }
        o.push('\n');
    }
    for (t, tr) in deps.triggers.iter().enumerate() {
        let _ = write!(o, "trigger id {}", t + 1);
        match (tr.multishot, tr.needed) {
            (true, n) => {
                let _ = write!(o, " multishot count {n}");
            }
            (false, 1) => o.push_str(" oneshot"),
            (false, n) => {
                let _ = write!(o, " barrier count {n}");
            }
        }
        if tr.delay > SimTime::ZERO {
            let _ = write!(o, " delay {}", tr.delay.ps());
        }
        o.push('\n');
    }
    o
}

/// Writes flows, dependencies and failures in the Ultra Ethernet htsim dialect: a `Triggers`
/// header always, `Failures` and `failure switch_type AGG switch_id S link_id L` lines for
/// `failures` (aggregation switch, uplink), and no lbsim extension. What the dialect cannot say
/// is refused: trigger delays, a flow with several triggers of one kind, and flows that wait
/// for several triggers at once.
pub fn write_uet(
    flows: &[FlowSpec],
    deps: &Dependencies,
    ids: &[u64],
    nodes: u32,
    failures: &[(u32, u32)],
) -> Result<String, String> {
    for (t, tr) in deps.triggers.iter().enumerate() {
        if tr.delay > SimTime::ZERO {
            return Err(format!(
                "trigger {} waits {} ps before starting its flows: the Ultra Ethernet dialect \
                 has no trigger delays (compute gaps)",
                t + 1,
                tr.delay.ps()
            ));
        }
        if tr.multishot && tr.needed > 1 {
            return Err(format!(
                "trigger {} is multishot with count {}: the dialect's multishot has no count",
                t + 1,
                tr.needed
            ));
        }
    }
    let mut gates = vec![0u32; flows.len()];
    for tr in &deps.triggers {
        for &f in &tr.targets {
            gates[f as usize] += 1;
        }
    }
    for (i, &g) in gates.iter().enumerate() {
        let id = ids.get(i).copied().unwrap_or(i as u64 + 1);
        let r = deps.on_recv_done.get(i).map_or(0, Vec::len);
        let sd = deps.on_send_done.get(i).map_or(0, Vec::len);
        if g > 1 || r > 1 || sd > 1 || deps.waits(i) > 1 {
            return Err(format!(
                "flow {id} names several triggers of one kind: the Ultra Ethernet dialect \
                 allows one trigger, one recv_done_trigger and one send_done_trigger per flow"
            ));
        }
    }
    let mut o = write(flows, deps, ids, nodes);
    if deps.triggers.is_empty() {
        // The dialect counts triggers against its header: say there are none.
        let at = o.find('\n').map_or(0, |i| i + 1);
        let at = at + o[at..].find('\n').map_or(0, |i| i + 1);
        o.insert_str(at, "Triggers 0\n");
    }
    if !failures.is_empty() {
        let at = o.find('\n').map_or(0, |i| i + 1);
        let at = at + o[at..].find('\n').map_or(0, |i| i + 1);
        let at = at + o[at..].find('\n').map_or(0, |i| i + 1);
        o.insert_str(at, &format!("Failures {}\n", failures.len()));
        for (sw, link) in failures {
            let _ = writeln!(o, "failure switch_type AGG switch_id {sw} link_id {link}");
        }
    }
    Ok(o)
}

fn number(toks: &[&str], i: usize, key: &str) -> Result<u64, String> {
    let t = toks
        .get(i)
        .ok_or_else(|| format!("`{key}` needs a value"))?;
    t.parse().map_err(|_| {
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
            format!("`{key}` {t} is too large (at most {})", u64::MAX)
        } else {
            format!("`{key}` expects a non-negative integer, found `{t}`")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str, name: &str) -> Result<Vec<FlowSpec>, ConfigError> {
        parse(t, name, 4, 4096).map(|m| m.flows)
    }

    #[test]
    fn parses_flows_and_comments() {
        let t = "Nodes 4\nConnections 2\n# hi\n0->1 id 7 start 100 size 4096\n2->3 id 8 size 10 # tail\n";
        let Matrix {
            flows: f,
            deps: d,
            ids,
            ..
        } = parse(t, "x.cm", 4, 4096).unwrap();
        assert_eq!(ids, [7, 8]);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].start, SimTime(100));
        assert_eq!(f[1].size_bytes, 10);
        assert_eq!(f[1].dst, HostId(3));
        assert!(d.is_empty() && d.gated.is_empty());
    }

    #[test]
    fn parses_triggers() {
        let t = "Nodes 4\nConnections 3\nTriggers 2\n0->1 id 1 size 8 recv_done_trigger 5\n\
                 2->3 id 2 size 8 recv_done_trigger 5 send_done_trigger 9\n\
                 1->2 id 3 trigger 5 size 8\ntrigger id 9 oneshot\ntrigger id 5 barrier delay 7\n";
        let Matrix {
            flows: f, deps: d, ..
        } = parse(t, "t.cm", 4, 4096).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(d.gated, [false, false, true]);
        // Trigger indices follow definition order: id 9 is 0, id 5 is 1.
        assert_eq!(d.on_recv_done, [vec![1], vec![1], vec![]]);
        assert_eq!(d.on_send_done, [vec![], vec![0], vec![]]);
        let b = &d.triggers[1];
        assert_eq!(
            (b.needed, b.multishot, b.delay, &b.targets[..]),
            (2, false, SimTime(7), &[2u32][..])
        );
        assert_eq!(d.triggers[0].needed, 1);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = p("Nodes 4\n0->9 id 1 size 5\n", "a.cm")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a.cm:2:") && e.contains("out of range"),
            "{e}"
        );
        let e = p("0->1 id 1 trigger 3 size 4\n", "b.cm")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("b.cm:1") && e.contains("undefined trigger id 3"),
            "{e}"
        );
        let e = p("Nodes 4\nConnections 3\n0->1 size 4\n", "c.cm")
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.cm:2"), "{e}");
        let e = p("0->1 size x\n", "d.cm").unwrap_err().to_string();
        assert!(e.contains("d.cm:1") && e.contains("integer"), "{e}");
        let e = p("Nodes 400\n", "e.cm").unwrap_err().to_string();
        assert!(e.contains("only 4 hosts"), "{e}");
        let e = p(
            "0->1 size 4 recv_done_trigger 1\ntrigger id 1 bogus\n",
            "f.cm",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("f.cm:2") && e.contains("oneshot, multishot or barrier"),
            "{e}"
        );
        let e = p("0->1 size 4 recv_done_trigger 1\n1->2 trigger 1 size 4\ntrigger id 1 barrier count 2\n", "g.cm")
            .unwrap_err()
            .to_string();
        assert!(e.contains("g.cm:3") && e.contains("needs 2"), "{e}");
        let e = p("Triggers 2\n0->1 size 4\ntrigger id 1 oneshot\n", "h.cm")
            .unwrap_err()
            .to_string();
        assert!(e.contains("h.cm:1") && e.contains("2 triggers"), "{e}");
    }

    #[test]
    fn flows_without_ids_take_their_position() {
        let m = parse(
            "0->1 size 4\n1->2 id 9 size 4\n2->3 size 4\n",
            "i.cm",
            4,
            4096,
        )
        .unwrap();
        assert_eq!(m.ids, [1, 9, 3]);
        let e = p("0->1 size 4\n# x\n1->2 id 1 size 4\n", "j.cm")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("j.cm:1:") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn cycles_are_rejected() {
        // 1 starts 2 starts 1: neither can ever start.
        let t = "0->1 id 1 trigger 1 size 4 recv_done_trigger 2\n\
                 1->2 id 2 trigger 2 size 4 recv_done_trigger 1\n\
                 2->3 id 3 size 4\ntrigger id 1 oneshot\ntrigger id 2 oneshot\n";
        let e = p(t, "cyc.cm").unwrap_err().to_string();
        assert!(e.contains("cyc.cm:1") && e.contains("cycle"), "{e}");
    }

    #[test]
    fn write_then_parse_round_trips() {
        let t = "0->1 id 1 start 5 size 8 recv_done_trigger 1\n2->3 id 2 size 9 send_done_trigger 1 recv_done_trigger 2\n\
                 1->2 id 3 trigger 1 size 8\n3->0 id 4 trigger 2 size 8\ntrigger id 1 barrier count 2 delay 40\ntrigger id 2 multishot\n";
        let m = parse(t, "r.cm", 4, 4096).unwrap();
        let w = write(&m.flows, &m.deps, &m.ids, 4);
        assert_eq!(m, parse(&w, "w.cm", 4, 4096).unwrap(), "{w}");
        // Ids other than 1, 2, ... survive the round trip too; without ids, flows count from 1.
        let t = t
            .replace("0->1 id 1 ", "0->1 id 90 ")
            .replace("1->2 id 3 ", "1->2 id 5000000000 ");
        let m = parse(&t, "r.cm", 4, 4096).unwrap();
        assert_eq!(m.ids, [90, 2, 5000000000, 4]);
        let w = write(&m.flows, &m.deps, &m.ids, 4);
        assert_eq!(m, parse(&w, "w.cm", 4, 4096).unwrap(), "{w}");
        let w = write(&m.flows, &m.deps, &[], 4);
        assert_eq!(parse(&w, "w.cm", 4, 4096).unwrap().ids, [1, 2, 3, 4]);
    }

    #[test]
    fn ultra_ethernet_extensions() {
        // Messages of one connection: one flow each, all keeping its id; a numbered `msg` too.
        let t = "Nodes 4\nConnections 3\nTriggers 0\n0->1 id 1 msg start 0 size 40\n\
                 0->1 id 1 msg 2 start 0 size 40\n2->3 id 2 start 0 size 8 prio 2000000\n";
        let m = parse(t, "m.cm", 4, 4096).unwrap();
        assert_eq!((m.flows.len(), &m.ids[..]), (3, &[1, 1, 2][..]));
        let e = p("0->1 id 1 msg size 4\n1->2 id 1 msg size 4\n", "n.cm")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("n.cm:2") && e.contains("share its two hosts"),
            "{e}"
        );
        let e = p("0->1 id 1 size 4\n0->1 id 1 msg size 4\n", "d.cm")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d.cm:2") && e.contains("duplicate flow id 1"),
            "{e}"
        );
        // Equal priorities are accepted, different ones refused naming both lines.
        assert!(parse("0->1 size 4 prio 3\n1->2 size 4 prio 3\n", "q", 4, 4096).is_ok());
        let e = p("0->1 size 4 prio 3\n1->2 size 4\n", "q.cm")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("q.cm:2") && e.contains("line 1") && e.contains("priority"),
            "{e}"
        );
        // Failure lines: aggregation uplinks only, counted against the header.
        let t = "Failures 1\n0->1 size 4\nfailure switch_type AGG switch_id 3 link_id 1\n";
        assert_eq!(parse(t, "f", 4, 4096).unwrap().failures, [(3, 1, 3)]);
        let e = p(&t.replace("AGG", "TOR"), "t.cm").unwrap_err().to_string();
        assert!(e.contains("t.cm:3") && e.contains("switch_type TOR"), "{e}");
        let e = p(&t.replace("Failures 1", "Failures 2"), "c.cm")
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.cm:1") && e.contains("2 failures"), "{e}");
        let e = p(&t.replace("link_id", "port"), "a.cm")
            .unwrap_err()
            .to_string();
        assert!(e.contains("a.cm:3") && e.contains("`port`"), "{e}");
    }
}
