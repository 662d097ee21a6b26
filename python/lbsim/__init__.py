"""lbsim for notebooks: run scenarios, compare schemes and sweep, with results as DataFrames.

Every run's outputs are the bytes ``lbsim run --out DIR`` writes (flows.csv, collectives.csv,
summary.json); the DataFrames are read from them, so a notebook and the command line agree
byte for byte. With ``[telemetry]`` on, the run's time series are the tables ``lbsim run``
writes under DIR/telemetry, streamed to a temporary directory while it runs. Simulations release the GIL (threads and notebooks stay responsive) and stop at
Ctrl-C, raising KeyboardInterrupt.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from . import _lbsim
from ._lbsim import ScenarioError

__version__ = _lbsim.__version__
__all__ = [
    "Result",
    "Scenario",
    "ScenarioError",
    "compare",
    "run",
    "schemes",
    "port_policies",
    "sweep",
]

Source = Union[str, os.PathLike, Mapping[str, Any], "Scenario", None]


def schemes() -> list:
    """The load-balancing schemes, in ``lbsim list`` order."""
    return list(_lbsim.schemes())


def port_policies() -> list:
    """The port policies of hosts with several ports (``load_balancing.port``), default first."""
    return list(_lbsim.port_policies())


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        # A TOML basic string: a bare `true` or `1` stays the string it was given as.
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ScenarioError(f"{v!r}: a {type(v).__name__} is not a scenario value")


def _sets(set: Optional[Mapping[str, Any]]) -> list:
    """``{"topology.k": 4}`` as the CLI's ``--set topology.k=4``."""
    return [f"{k}={_toml_value(v)}" for k, v in (set or {}).items()]


def _split(source: Source) -> tuple:
    if isinstance(source, Scenario):
        return source._path, source._table, source._sets
    if source is None:
        return None, None, []
    if isinstance(source, Mapping):
        return None, dict(source), []
    return os.fspath(source), None, []


def _frame(data: Optional[bytes]) -> Optional[pd.DataFrame]:
    """A CSV output as a DataFrame: integer columns with nulls stay integers (Int64)."""
    if data is None:
        return None
    table = pacsv.read_csv(pa.BufferReader(data))
    return table.to_pandas(
        types_mapper={pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}.get
    )


_NULLABLE = {
    pa.int64(): pd.Int64Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
    pa.uint32(): pd.UInt32Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def _telemetry_frame(path: Optional[Path]) -> Optional[pd.DataFrame]:
    """A telemetry table (Parquet or CSV) as a DataFrame, integer columns nullable."""
    if path is None:
        return None
    if path.suffix == ".parquet":
        table = pq.read_table(path)
    else:
        table = pacsv.read_csv(path)
    return table.to_pandas(types_mapper=_NULLABLE.get)


class Scenario:
    """A scenario, validated as the CLI validates it (errors raise ScenarioError with the
    CLI's message).

    ``Scenario("scenarios/bench-a2a-128.toml")``, ``Scenario({"topology": {"k": 4}})`` or
    ``Scenario(set={"workload.kind": "all_to_all"})`` (the built-in default with overrides).
    """

    def __init__(self, source: Source = None, set: Optional[Mapping[str, Any]] = None):
        path, table, sets = _split(source)
        self._path, self._table = path, table
        self._sets = list(sets) + _sets(set)
        self.toml = _lbsim.show(self._path, self._table, self._sets)

    def __repr__(self) -> str:
        where = self._path or ("dict" if self._table is not None else "built-in default")
        return f"Scenario({where}, sets={self._sets})"

    def run(self, force: bool = False) -> "Result":
        return run(self, force=force)


class Result:
    """One run's outputs: ``summary`` (dict), ``flows`` and ``collectives`` (DataFrames; the
    latter None for workloads without collectives) and ``files`` (the exact bytes). With
    ``[telemetry]`` on, ``ports``, ``port_index``, ``flow_series`` and ``events`` are its
    tables as DataFrames (None when telemetry was off or selected nothing for the table), read
    from ``telemetry`` (table name -> file, in a temporary directory kept while the Result
    is)."""

    def __init__(self, files: dict, telemetry_dir: Optional[str] = None):
        self.interrupted = bool(files.pop("interrupted"))
        tables = [Path(p) for p in files.pop("telemetry", [])]
        self.files = files
        self.summary = json.loads(files["summary.json"])
        self.telemetry = {p.name.split(".")[0]: p for p in tables}
        if telemetry_dir is not None:
            if tables:
                weakref.finalize(self, shutil.rmtree, telemetry_dir, True)
            else:
                shutil.rmtree(telemetry_dir, ignore_errors=True)
        self._flows = None
        self._collectives = None
        self._tables: dict = {}

    @property
    def flows(self) -> pd.DataFrame:
        if self._flows is None:
            self._flows = _frame(self.files["flows.csv"])
        return self._flows

    @property
    def collectives(self) -> Optional[pd.DataFrame]:
        if self._collectives is None:
            self._collectives = _frame(self.files.get("collectives.csv"))
        return self._collectives

    def _table(self, name: str) -> Optional[pd.DataFrame]:
        if name not in self._tables:
            self._tables[name] = _telemetry_frame(self.telemetry.get(name))
        return self._tables[name]

    @property
    def ports(self) -> Optional[pd.DataFrame]:
        """Telemetry's ``ports`` table: one row per sampled port per interval."""
        return self._table("ports")

    @property
    def port_index(self) -> Optional[pd.DataFrame]:
        """Telemetry's ``port_index`` table: the sampled ports' links, tiers and rates."""
        return self._table("port_index")

    @property
    def flow_series(self) -> Optional[pd.DataFrame]:
        """Telemetry's ``flows`` table: one row per sampled flow per interval."""
        return self._table("flows")

    @property
    def events(self) -> Optional[pd.DataFrame]:
        """Telemetry's ``events`` table (opt in): drops, marks, trims."""
        return self._table("events")

    def write(self, directory: Union[str, os.PathLike]) -> Path:
        """Writes the run's files into ``directory`` as ``lbsim run --out`` does (telemetry
        tables under ``directory/telemetry``)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        # summary.json last, as the CLI writes it: its presence marks a finished run.
        for name, path in self.telemetry.items():
            (d / "telemetry").mkdir(exist_ok=True)
            shutil.copyfile(path, d / "telemetry" / path.name)
        for name, data in sorted(self.files.items(), key=lambda kv: kv[0] == "summary.json"):
            (d / name).write_bytes(data)
        return d

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"Result(scheme={s['scheme']!r}, flows={s['flows_completed']}/{s['flows']}, "
            f"cct_over_bound={s.get('cct_over_bound')})"
        )


def run(
    scenario: Source = None, set: Optional[Mapping[str, Any]] = None, force: bool = False
) -> Result:
    """Runs a scenario file, dict or Scenario (the built-in default without one), with
    ``set`` overrides as the CLI's ``--set``."""
    path, table, sets = _split(scenario)
    tdir = tempfile.mkdtemp(prefix="lbsim-telemetry-")
    try:
        files = _lbsim.run(path, table, list(sets) + _sets(set), force, tdir)
    except BaseException:
        shutil.rmtree(tdir, ignore_errors=True)
        raise
    return Result(files, tdir)


def compare(
    scenario: Source = None,
    schemes: Optional[Sequence[str]] = None,
    set: Optional[Mapping[str, Any]] = None,
    threads: Optional[int] = None,
) -> pd.DataFrame:
    """Runs the scenario once per scheme (every registered scheme by default), in parallel
    threads, and returns one row of summary fields per scheme."""
    names = list(schemes) if schemes is not None else _lbsim.schemes()
    base = dict(set or {})

    def one(name: str) -> dict:
        return run(scenario, set={**base, "load_balancing.scheme": name}).summary

    with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1) as pool:
        rows = list(pool.map(one, names))
    flat = [{k: v for k, v in r.items() if not isinstance(v, (dict, list))} for r in rows]
    return pd.DataFrame(flat)


def sweep(
    path: Union[str, os.PathLike],
    out: Optional[Union[str, os.PathLike]] = None,
    jobs: Optional[int] = None,
) -> pd.DataFrame:
    """Runs a sweep file (resumable, as ``lbsim sweep --out``) and returns its results.csv.
    Without ``out`` the runs go to a temporary directory, removed before this returns."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="lbsim-sweep-") as tmp:
            return sweep(path, tmp, jobs)
    results = _lbsim.sweep(os.fspath(path), os.fspath(out), jobs)
    return pd.read_csv(results)
