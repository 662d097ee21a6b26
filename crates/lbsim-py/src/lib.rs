//! `lbsim._lbsim`: the simulator for Python. Runs hand back the exact bytes the CLI writes
//! (flows.csv, collectives.csv, summary.json), which the `lbsim` Python package turns into
//! DataFrames, so a notebook and `lbsim run --out` never disagree. Simulation releases the GIL;
//! Ctrl-C (a pending KeyboardInterrupt) stops a run at its next progress check.

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use lbsim::{Origin, Scenario, ScenarioFile};

create_exception!(
    _lbsim,
    ScenarioError,
    PyException,
    "A scenario (file, dict or --set) that lbsim refuses; the message is the CLI's."
);

/// Any error before a run starts, as the CLI prints it after `error: `.
fn scenario_error(e: anyhow::Error) -> PyErr {
    ScenarioError::new_err(format!("{e:#}"))
}

/// A Python value as TOML, for scenarios given as dicts.
fn to_toml(v: &Bound<'_, PyAny>, key: &str) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| ScenarioError::new_err(format!("{key}: keys must be strings")))?;
            let path = if key.is_empty() {
                k.clone()
            } else {
                format!("{key}.{k}")
            };
            t.insert(k, to_toml(&x, &path)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut a = Vec::new();
        for (i, x) in v.try_iter()?.enumerate() {
            a.push(to_toml(&x?, &format!("{key}.{i}"))?);
        }
        return Ok(toml::Value::Array(a));
    }
    Err(ScenarioError::new_err(format!(
        "{key}: a {} is not a scenario value (use bool, int, float, str, list or dict)",
        v.get_type().name()?
    )))
}

/// The scenario file from a path or a dict (or the built-in default), with `sets` applied.
fn load(
    path: Option<PathBuf>,
    table: Option<&Bound<'_, PyDict>>,
    sets: &[String],
) -> PyResult<(ScenarioFile, Origin)> {
    match table {
        Some(d) => {
            let toml::Value::Table(mut t) = to_toml(d.as_any(), "")? else {
                unreachable!("a dict is a table")
            };
            lbsim::scenario::apply_sets(&mut t, sets).map_err(|e| scenario_error(e.into()))?;
            // Relative paths in the dict (a trace, a connection matrix) resolve against the
            // working directory, as they would on the command line.
            let origin =
                Origin::named("scenario dict", std::env::current_dir().ok()).with_sets(sets);
            let file = ScenarioFile::from_table(t, &origin, "as given")
                .map_err(|e| scenario_error(e.into()))?;
            Ok((file, origin))
        }
        None => lbsim_cli::load_scenario(path.as_deref(), sets).map_err(scenario_error),
    }
}

fn build(file: ScenarioFile, origin: &Origin, force: bool) -> PyResult<Scenario> {
    if let Some(e) = file.memory_estimate() {
        lbsim_cli::guard::check_memory("this run", &e, 1, force).map_err(scenario_error)?;
    }
    Scenario::build(file, origin).map_err(|e| scenario_error(e.into()))
}

/// Validates a scenario and returns it with every default filled in, as `lbsim show` prints it.
#[pyfunction]
#[pyo3(signature = (path=None, table=None, sets=Vec::new()))]
fn show(
    path: Option<PathBuf>,
    table: Option<&Bound<'_, PyDict>>,
    sets: Vec<String>,
) -> PyResult<String> {
    let (mut file, origin) = load(path, table, &sets)?;
    build(file.clone(), &origin, true)?;
    lbsim_cli::output::show_paths(&mut file, &origin, None).map_err(scenario_error)?;
    Ok(lbsim_cli::output::show(&file))
}

/// Runs a scenario; returns {file name: bytes} as `lbsim run --out` writes them, plus
/// "interrupted" and "telemetry" (the paths of the telemetry tables, written under
/// `telemetry_dir` as `lbsim run` writes them under DIR/telemetry; empty when it is off). A
/// KeyboardInterrupt while it runs stops it and is raised.
#[pyfunction]
#[pyo3(signature = (path=None, table=None, sets=Vec::new(), force=false, telemetry_dir=None))]
fn run<'py>(
    py: Python<'py>,
    path: Option<PathBuf>,
    table: Option<&Bound<'py, PyDict>>,
    sets: Vec<String>,
    force: bool,
    telemetry_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let (file, origin) = load(path, table, &sets)?;
    let sc = build(file, &origin, force)?;
    let mut interrupt: Option<PyErr> = None;
    let ran = py.allow_threads(|| {
        lbsim_cli::telemetry::run(sc, telemetry_dir.as_deref(), &mut |_| {
            // Every 2^16 events: take the GIL only to ask whether Ctrl-C was pressed.
            match Python::with_gil(|py| py.check_signals()) {
                Ok(()) => true,
                Err(e) => {
                    interrupt = Some(e);
                    false
                }
            }
        })
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let (res, tables) = ran.map_err(|e| PyException::new_err(format!("{e:#}")))?;
    let out = PyDict::new(py);
    let files =
        lbsim_cli::output::run_files(&res).map_err(|e| PyException::new_err(format!("{e:#}")))?;
    for (name, bytes) in files {
        out.set_item(name, PyBytes::new(py, &bytes))?;
    }
    out.set_item("interrupted", res.interrupted)?;
    out.set_item("telemetry", tables)?;
    Ok(out)
}

/// Runs a sweep file into `out` (resumable, as `lbsim sweep`); returns the path of its
/// results.csv.
#[pyfunction]
#[pyo3(signature = (path, out, jobs=None))]
fn sweep(py: Python<'_>, path: PathBuf, out: PathBuf, jobs: Option<usize>) -> PyResult<PathBuf> {
    let args = lbsim_cli::sweep::SweepArgs {
        sweep: Some(path),
        out: Some(out.clone()),
        jobs,
        quiet: true,
        ..Default::default()
    };
    py.allow_threads(|| lbsim_cli::sweep::main(args))
        .map_err(scenario_error)?;
    Ok(out.join("results.csv"))
}

/// The registered load-balancing schemes, in `lbsim list` order.
#[pyfunction]
fn schemes() -> Vec<&'static str> {
    lbsim::lb::scheme_names()
}

/// The port policies of hosts with several ports (`load_balancing.port`), default first.
#[pyfunction]
fn port_policies() -> Vec<&'static str> {
    lbsim::lb::port::port_names()
}

#[pymodule]
fn _lbsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(show, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(port_policies, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
