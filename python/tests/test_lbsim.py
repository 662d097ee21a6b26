"""The Python package against the CLI: same bytes, same errors, the documented dtypes."""

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import lbsim

ROOT = Path(__file__).resolve().parents[2]
LBSIM = Path(os.environ.get("LBSIM_BIN", ROOT / "target" / "release" / "lbsim"))
SMALL = {"topology.k": 4, "workload.message_bytes": 65536}
WALL_CLOCK = {"wall_seconds", "events_per_second"}


def cli_run(out, *args):
    if not LBSIM.exists():
        pytest.skip(f"no lbsim binary at {LBSIM} (cargo build --release)")
    subprocess.run([str(LBSIM), "run", "--quiet", "--out", str(out), *args], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def sets_args(sets):
    return [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]


def without_wall_clock(data):
    s = json.loads(data)
    for k in WALL_CLOCK:
        s.pop(k)
    return s


@pytest.mark.parametrize(
    "sets",
    [
        {**SMALL, "load_balancing.scheme": "ofan"},
        {**SMALL, "load_balancing.scheme": "reps", "transport.loss_recovery": "trim"},
        {"topology.k": 4, "workload.kind": "ring_allreduce", "workload.message_bytes": 262144},
    ],
)
def test_a_run_gives_the_clis_bytes(tmp_path, sets):
    cli = cli_run(tmp_path / "cli", *sets_args(sets))
    r = lbsim.run(set=sets)
    assert sorted(r.files) == sorted(p.name for p in cli.iterdir())
    for name, data in r.files.items():
        want = (cli / name).read_bytes()
        if name == "summary.json":
            assert without_wall_clock(data) == without_wall_clock(want)
        else:
            assert data == want, name
    written = r.write(tmp_path / "py")
    assert (written / "flows.csv").read_bytes() == (cli / "flows.csv").read_bytes()


def test_a_scenario_file_runs_as_on_the_command_line(tmp_path):
    path = ROOT / "scenarios" / "default.toml"
    cli = cli_run(tmp_path / "cli", str(path), *sets_args(SMALL))
    r = lbsim.run(str(path), set=SMALL)
    assert r.files["flows.csv"] == (cli / "flows.csv").read_bytes()


def test_a_dict_is_the_same_scenario_as_its_sets():
    d = {"topology": {"k": 4}, "workload": {"message_bytes": 65536}}
    assert lbsim.run(d).files["flows.csv"] == lbsim.run(set=SMALL).files["flows.csv"]


def test_frames_have_the_documented_dtypes():
    r = lbsim.run(set=SMALL)
    f = r.flows
    assert len(f) == r.summary["flows"] == 16
    for col in ["flow_id", "src", "dst", "size_bytes", "start_ps", "finish_ps", "fct_ps",
                "data_packets_sent", "packets_dropped", "retransmissions", "timeouts"]:
        assert f[col].dtype == pd.Int64Dtype(), col
    assert (f["size_bytes"] == 65536).all()
    # A permutation is one collective of its own.
    assert len(r.collectives) == 1 and r.collectives["flows"][0] == 16
    c = lbsim.run(set={"topology.k": 4, "workload.kind": "ring_allreduce",
                       "workload.message_bytes": 262144}).collectives
    assert c is not None and len(c) >= 1
    assert c["cct_over_bound"].dtype == "float64"
    assert (c["cct_over_bound"] >= 1.0).all()


TELEMETRY = {**SMALL, "telemetry.enabled": True, "telemetry.flows": "all",
             "telemetry.events": ["drops", "marks"]}


def test_telemetry_tables_are_the_clis_and_read_as_frames(tmp_path):
    cli = cli_run(tmp_path / "cli", *sets_args(SMALL), "--set", "telemetry.enabled=true",
                  "--set", "telemetry.flows=all", "--set", 'telemetry.events=["drops", "marks"]',
                  "--set", "telemetry.format=csv")
    r = lbsim.run(set={**TELEMETRY, "telemetry.format": "csv"})
    assert sorted(r.telemetry) == ["events", "flows", "port_index", "ports"]
    for name, path in r.telemetry.items():
        assert path.read_bytes() == (cli / "telemetry" / path.name).read_bytes(), name
    written = r.write(tmp_path / "py")
    assert (written / "telemetry" / "ports.csv").read_bytes() == \
        (cli / "telemetry" / "ports.csv").read_bytes()
    # Parquet reads to the same frames as CSV.
    p = lbsim.run(set=TELEMETRY)
    assert p.telemetry["ports"].suffix == ".parquet"
    pd.testing.assert_frame_equal(p.ports, r.ports, check_dtype=False)
    ports, index = p.ports, p.port_index
    assert len(index) == 96 and set(index["tier"]) == {
        "host_up", "tor_up", "agg_up", "core_down", "agg_down", "tor_down"}
    assert list(ports.columns) == [
        "t_start_ps", "t_end_ps", "port", "queue_mean_bytes", "queue_max_bytes", "bytes_sent",
        "utilisation", "drops", "ecn_marks", "trims", "link_losses"]
    assert ports["t_end_ps"].max() == p.summary["end_ps"]
    assert len(ports) == 96 * ports["t_end_ps"].nunique()
    assert ports["queue_mean_bytes"].dtype == "float64"
    assert index["buffer_bytes"].isna().sum() == 16
    series = p.flow_series
    assert series["cwnd_bytes"].isna().all() and series["bytes_in_flight"].isna().all()
    last = series.groupby("flow")["bytes_acked"].last()
    assert (last == 65536).all() and len(last) == 16
    assert p.events is not None and len(p.events) == p.summary["packets_dropped"] + \
        p.summary["ecn_marks"]


def test_telemetry_is_none_when_off():
    r = lbsim.run(set=SMALL)
    assert r.ports is None and r.flow_series is None and r.port_index is None
    assert r.events is None and r.telemetry == {}
    r = lbsim.run(set={**SMALL, "telemetry.enabled": True, "telemetry.ports": "tor_up"})
    assert r.flow_series is None and r.events is None and len(r.port_index) == 16


def test_bad_input_raises_scenario_error_with_the_clis_message(tmp_path):
    with pytest.raises(lbsim.ScenarioError, match=r"--set topology.link_gbps=0: must be a positive"):
        lbsim.run(set={"topology.link_gbps": 0})
    with pytest.raises(lbsim.ScenarioError, match=r"telemetry.ports.*no tier or link named `tor:9"):
        lbsim.run(set={**SMALL, "telemetry.ports": "tor:9-agg:0"})
    # A valid setting with telemetry off would do nothing: refused, naming it.
    with pytest.raises(lbsim.ScenarioError, match=r"telemetry.sample_ns.*telemetry.enabled = true"):
        lbsim.run(set={**SMALL, "telemetry.sample_ns": 500})
    with pytest.raises(lbsim.ScenarioError, match=r"scenario dict: key `topology.k`"):
        lbsim.Scenario({"topology": {"k": 3}})
    with pytest.raises(lbsim.ScenarioError, match="cannot read scenario file"):
        lbsim.run(str(tmp_path / "missing.toml"))
    with pytest.raises(lbsim.ScenarioError, match="unknown"):
        lbsim.Scenario(set={"topology.no_such_key": 1})
    with pytest.raises(lbsim.ScenarioError, match="not a scenario value"):
        lbsim.Scenario({"seed": object()})
    bad = tmp_path / "bad.toml"
    bad.write_text("[topology]\nk = 5\n")
    with pytest.raises(lbsim.ScenarioError, match=r"bad.toml.*topology.k"):
        lbsim.run(str(bad))
    if LBSIM.exists():
        cli = subprocess.run([str(LBSIM), "run", str(bad)], capture_output=True, text=True)
        assert cli.returncode != 0
        with pytest.raises(lbsim.ScenarioError) as e:
            lbsim.run(str(bad))
        assert cli.stderr.strip() == f"error: {e.value}"


def test_scenario_shows_every_default():
    s = lbsim.Scenario(set={"load_balancing.scheme": "reps"})
    assert 'scheme = "reps"' in s.toml
    assert "buffer_bytes = 800000" in s.toml
    assert s.run().summary["scheme"] == "reps"


def test_compare_gives_a_row_per_scheme():
    df = lbsim.compare(schemes=["ecmp", "host_spray", "ofan"], set=SMALL)
    assert list(df["scheme"]) == ["ecmp", "host_spray", "ofan"]
    assert (df["cct_over_bound"] >= 1.0).all()
    one = lbsim.run(set={**SMALL, "load_balancing.scheme": "ofan"}).summary
    assert df.iloc[2]["cct_ps"] == one["cct_ps"]


def test_registries_are_the_clis():
    assert lbsim.schemes()[:2] == ["ecmp", "subflow"]
    ports = lbsim.port_policies()
    assert ports[0] == "scheme" and "adaptive" in ports
    listing = subprocess.run([LBSIM, "list"], capture_output=True, text=True, check=True).stdout
    for p in ports:
        assert f"\n  {p} " in listing


def test_sweep_returns_its_results(tmp_path):
    df = lbsim.sweep(ROOT / "sweeps" / "example.toml", out=tmp_path / "sw", jobs=2)
    assert len(df) == 8
    assert set(df["load_balancing.scheme"]) == {"ecmp", "host_spray"}
    assert (tmp_path / "sw" / "results.csv").exists()


def test_sweep_without_out_leaves_no_directory(tmp_path, monkeypatch):
    # The runs go to a temporary directory nobody can name afterwards: it must not outlive
    # the call.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    df = lbsim.sweep(ROOT / "sweeps" / "example.toml", jobs=2)
    assert len(df) == 8
    assert list(tmp_path.iterdir()) == []


def test_the_gil_is_released_while_simulating():
    ticks = []
    done = threading.Event()

    def work():
        lbsim.run(set={"topology.k": 8, "workload.message_bytes": 1048576})
        done.set()

    t = threading.Thread(target=work)
    start = time.monotonic()
    t.start()
    while not done.is_set():
        ticks.append(time.monotonic())
        time.sleep(0.001)
    t.join()
    elapsed_ms = (time.monotonic() - start) * 1000
    # The main thread kept running while the run went on: a held GIL leaves it one or two
    # ticks whatever the run's length, a released one about a tick per millisecond. The
    # bar scales with the run's wall time, so a faster simulator cannot fail it.
    assert elapsed_ms > 10, f"the run took {elapsed_ms:.1f} ms, too short to tell"
    assert len(ticks) >= max(5, elapsed_ms / 4), (len(ticks), elapsed_ms)


def test_ctrl_c_interrupts_a_run():
    # Ctrl-C as a user presses it: again every 0.5 s until the run stops. Python raises
    # KeyboardInterrupt only if SIGINT was not ignored when it started, and a shell that
    # starts a job in the background without job control (`cmd &`, nohup) ignores it; so
    # the handler an interactive session has is put in place here.
    stop = threading.Event()
    sent = []

    def press():
        while not stop.wait(0.5 if sent else 0.3):
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=press, daemon=True)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.monotonic()
    t.start()
    raised, result = False, None
    try:
        result = lbsim.run(ROOT / "scenarios" / "bench-a2a-128.toml")
    except KeyboardInterrupt:
        raised = True
    finally:
        stop.set()
        t.join()
        signal.signal(signal.SIGINT, previous)
    took = time.monotonic() - start
    # A failure says which side failed: no press sent, or presses the run did not see.
    assert raised, (
        f"no KeyboardInterrupt: {len(sent)} presses, the first "
        f"{sent[0] - start if sent else float('nan'):.2f} s in; the run returned after "
        f"{took:.2f} s, interrupted={getattr(result, 'interrupted', None)}, "
        f"events={result.summary['events'] if result else None}"
    )
    # The whole run takes seconds; the interrupt lands at a progress check after a press.
    assert sent and time.monotonic() - sent[0] < 5.0
