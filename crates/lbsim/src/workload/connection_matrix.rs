//! Import of htsim's connection-matrix text format:
//!
//! ```text
//! Nodes 16
//! Connections 2
//! # comment
//! 0->5 id 1 start 0 size 2097152
//! 3->1 id 2 start 1000000 size 65536
//! ```
//! Start times are picoseconds. Triggers (`Triggers`, `trigger`, `send_done_trigger`,
//! `recv_done_trigger`) and `Failures` are not supported yet and are rejected with a clear error.

use std::path::Path;

use super::FlowSpec;
use crate::ids::HostId;
use crate::scenario::ConfigError;
use crate::time::SimTime;

pub fn load(path: &Path, hosts: u32) -> Result<Vec<FlowSpec>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.display().to_string(),
        msg: format!("cannot read connection matrix: {e}"),
    })?;
    parse(&text, &path.display().to_string(), hosts)
}

/// Parses connection-matrix `text`; `name` is used in error messages.
pub fn parse(text: &str, name: &str, hosts: u32) -> Result<Vec<FlowSpec>, ConfigError> {
    let err = |line: usize, msg: String| ConfigError::Trace {
        path: name.to_string(),
        line,
        msg,
    };
    let mut nodes: Option<u32> = None;
    let mut connections: Option<(usize, usize)> = None;
    let mut flows = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        match toks[0] {
            "Nodes" => {
                let n = number(&toks, 1, ln, "Nodes").map_err(|m| err(ln, m))?;
                if n > hosts as u64 {
                    return Err(err(
                        ln,
                        format!("Nodes {n} but the topology has only {hosts} hosts"),
                    ));
                }
                nodes = Some(n as u32);
                continue;
            }
            "Connections" => {
                let n = number(&toks, 1, ln, "Connections").map_err(|m| err(ln, m))?;
                connections = Some((n as usize, ln));
                continue;
            }
            "Triggers" | "Failures" => {
                return Err(err(
                    ln,
                    format!("`{}` is not yet supported by lbsim", toks[0]),
                ))
            }
            "trigger" => return Err(err(ln, "trigger lines are not yet supported".into())),
            _ => {}
        }
        let (s, d) = toks[0]
            .split_once("->")
            .ok_or_else(|| err(ln, format!("expected `SRC->DST ...`, found `{}`", toks[0])))?;
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
        let mut k = 1;
        while k < toks.len() {
            let key = toks[k];
            let val = number(&toks, k + 1, ln, key).map_err(|m| err(ln, m))?;
            match key {
                "id" => {
                    if !ids.insert(val) {
                        return Err(err(ln, format!("duplicate flow id {val}")));
                    }
                }
                "start" => start = val,
                "size" => size = Some(val),
                "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                    return Err(err(ln, format!("`{key}` is not yet supported by lbsim")))
                }
                other => return Err(err(ln, format!("unknown field `{other}`"))),
            }
            k += 2;
        }
        let size = size.ok_or_else(|| err(ln, "missing `size B`".into()))?;
        if size == 0 {
            return Err(err(ln, "size must be positive".into()));
        }
        flows.push(FlowSpec {
            src: HostId(src),
            dst: HostId(dst),
            size_bytes: size,
            start: SimTime(start),
        });
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
    if flows.is_empty() {
        return Err(err(0, "no connections".into()));
    }
    Ok(flows)
}

fn number(toks: &[&str], i: usize, _ln: usize, key: &str) -> Result<u64, String> {
    let t = toks
        .get(i)
        .ok_or_else(|| format!("`{key}` needs a value"))?;
    t.parse()
        .map_err(|_| format!("`{key}` expects a non-negative integer, found `{t}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flows_and_comments() {
        let t = "Nodes 4\nConnections 2\n# hi\n0->1 id 7 start 100 size 4096\n2->3 id 8 size 10 # tail\n";
        let f = parse(t, "x.cm", 4).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].start, SimTime(100));
        assert_eq!(f[1].size_bytes, 10);
        assert_eq!(f[1].dst, HostId(3));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("Nodes 4\n0->9 id 1 size 5\n", "a.cm", 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a.cm:2:") && e.contains("out of range"),
            "{e}"
        );
        let e = parse("0->1 id 1 trigger 3 size 4\n", "b.cm", 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("b.cm:1") && e.contains("not yet supported"),
            "{e}"
        );
        let e = parse("Nodes 4\nConnections 3\n0->1 size 4\n", "c.cm", 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.cm:2"), "{e}");
        let e = parse("0->1 size x\n", "d.cm", 4).unwrap_err().to_string();
        assert!(e.contains("d.cm:1") && e.contains("integer"), "{e}");
        let e = parse("Nodes 400\n", "e.cm", 4).unwrap_err().to_string();
        assert!(e.contains("only 4 hosts"), "{e}");
    }
}
