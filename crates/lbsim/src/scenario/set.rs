//! `--set key.path=value`: parsing, applying to the file's table, and blaming errors on the
//! `--set` that gave the value.

use super::*;

/// Re-attributes an error about a key to the last `--set` that set it (or a section holding
/// it): the value came from the command line, not from the file. Keys are compared in `--set`
/// form (`failures[0].at_us` is `failures.0.at_us`).
pub(super) fn blame_sets(e: ConfigError, sets: &[String]) -> ConfigError {
    let ConfigError::Invalid { key, msg, .. } = &e else {
        return e;
    };
    let dotted = key.replace('[', ".").replace(']', "");
    for arg in sets.iter().rev() {
        let Ok((path, _)) = parse_set(arg) else {
            continue;
        };
        let set = path.join(".");
        if dotted == set || dotted.starts_with(&format!("{set}.")) {
            let msg = if dotted == set {
                msg.clone()
            } else {
                format!("key `{key}`: {msg}")
            };
            return ConfigError::Set {
                arg: arg.clone(),
                msg,
            };
        }
    }
    e
}

/// Parses one `key.path=value` override. The value is read as a TOML value (number, bool, string,
/// array); anything that is not valid TOML is taken as a bare string.
pub fn parse_set(arg: &str) -> Result<(Vec<String>, toml::Value), ConfigError> {
    let err = |msg: &str| ConfigError::Set {
        arg: arg.to_string(),
        msg: msg.to_string(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| err("expected key.path=value"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
        return Err(err("empty key"));
    }
    let value = value.trim();
    let parsed = match toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
    {
        // `1e15` on a command line means the number: an integer key takes it as one.
        Some(toml::Value::Float(x))
            if value.contains(['e', 'E']) && x.fract() == 0.0 && x.abs() <= (1u64 << 53) as f64 =>
        {
            toml::Value::Integer(x as i64)
        }
        Some(v) => v,
        None if is_integer_text(value) => {
            return Err(err(&format!(
                "{value} is past the largest integer a scenario holds ({})",
                i64::MAX
            )))
        }
        None => toml::Value::String(value.to_string()),
    };
    Ok((
        key.split('.').map(|s| s.trim().to_string()).collect(),
        parsed,
    ))
}

/// An integer as TOML writes one (sign, digits, underscores), whatever its size.
fn is_integer_text(v: &str) -> bool {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Applies overrides to a parsed TOML table (see [`set_path`] for how a path reaches into
/// lists).
pub fn apply_sets(table: &mut toml::Table, sets: &[String]) -> Result<(), ConfigError> {
    for arg in sets {
        let (path, value) = parse_set(arg)?;
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        set_path(table, &parts, Some(value)).map_err(|msg| ConfigError::Set {
            arg: arg.clone(),
            msg,
        })?;
    }
    Ok(())
}

/// Sets the value at the dotted path `parts` in `table`, or removes the key when `value` is
/// `None`. A numeric part indexes a list: `failures.0.random_fraction` reaches into the first
/// `[[failures]]` entry. A missing key followed by a number is created as a list, and the index
/// one past the end appends an entry, so `failures.0.kind=down` adds a failure to a scenario that
/// has none; a larger index is an error naming the list.
pub fn set_path(
    table: &mut toml::Table,
    parts: &[&str],
    value: Option<toml::Value>,
) -> Result<(), String> {
    if parts.is_empty() || parts.iter().any(|p| p.is_empty()) {
        return Err("empty key part".into());
    }
    set_in_table(table, parts, 0, value)
}

fn set_in_table(
    t: &mut toml::Table,
    parts: &[&str],
    i: usize,
    value: Option<toml::Value>,
) -> Result<(), String> {
    if i + 1 == parts.len() {
        match value {
            None => t.remove(parts[i]),
            Some(v) => t.insert(parts[i].to_string(), v),
        };
        return Ok(());
    }
    let list = parts[i + 1].parse::<usize>().is_ok();
    if value.is_none() && !t.contains_key(parts[i]) {
        // Nothing to remove.
        return Ok(());
    }
    let next = t.entry(parts[i].to_string()).or_insert_with(|| {
        if list {
            toml::Value::Array(Vec::new())
        } else {
            toml::Value::Table(toml::Table::new())
        }
    });
    set_in_value(next, parts, i + 1, value)
}

/// `v` is the value at `parts[..i]`; sets `parts[i..]` inside it.
fn set_in_value(
    v: &mut toml::Value,
    parts: &[&str],
    i: usize,
    value: Option<toml::Value>,
) -> Result<(), String> {
    let here = parts[..i].join(".");
    match v {
        toml::Value::Table(t) => set_in_table(t, parts, i, value),
        toml::Value::Array(a) => {
            let part = parts[i];
            let idx: usize = part.parse().map_err(|_| {
                format!(
                    "`{here}` is a list: index it with a number, e.g. {here}.0.<key>, not `{part}`"
                )
            })?;
            if idx > a.len() {
                return Err(format!(
                    "index {idx} is out of range: `{here}` has {} entries (index {} appends one)",
                    a.len(),
                    a.len()
                ));
            }
            if i + 1 == parts.len() {
                let Some(value) = value else {
                    return Err(format!("`{here}.{part}`: a list entry cannot be unset"));
                };
                if idx == a.len() {
                    a.push(value);
                } else {
                    a[idx] = value;
                }
                return Ok(());
            }
            if idx == a.len() {
                a.push(toml::Value::Table(toml::Table::new()));
            }
            set_in_value(&mut a[idx], parts, i + 1, value)
        }
        other => Err(format!("`{here}` is {}, not a section", describe(other))),
    }
}

/// A value's type, and the value itself when it is a short scalar. Never the TOML writer: a
/// user's string may be long or (300 quotes in a row) overflow its quote counter.
fn describe(v: &toml::Value) -> String {
    match v {
        toml::Value::Integer(i) => format!("an integer ({i})"),
        toml::Value::Float(f) => format!("a float ({f})"),
        toml::Value::Boolean(b) => format!("a boolean ({b})"),
        toml::Value::String(s) if s.len() <= 40 => format!("a string ({s:?})"),
        toml::Value::String(_) => "a string".to_string(),
        toml::Value::Datetime(_) => "a datetime".to_string(),
        toml::Value::Array(_) => "a list".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    }
}
