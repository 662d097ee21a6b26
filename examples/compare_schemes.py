"""Compare load-balancing schemes on a small all-to-all and plot what differs.

    python examples/compare_schemes.py [OUT_DIR]

Writes cct.png (CCT over the lower bound per scheme), fct_cdf.png (each scheme's flow
completion times) and queue.png (each scheme's mean ToR-uplink queue over time, from the run's
telemetry) to OUT_DIR (default: results/examples). Runs headless (matplotlib's Agg).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import lbsim  # noqa: E402

SCENARIO = {
    "topology": {"k": 4, "buffer_bytes": 100_000},
    "workload": {"kind": "all_to_all", "message_bytes": 262_144},
}
SCHEMES = ["ecmp", "flowlet_ar", "host_spray", "reps", "switch_ar", "ofan"]
TELEMETRY = {"telemetry.enabled": True, "telemetry.ports": "tor_up", "telemetry.sample_ns": 1000}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    summary = lbsim.compare(SCENARIO, schemes=SCHEMES)
    print(summary[["scheme", "cct_ps", "cct_over_bound", "packets_dropped"]].to_string(index=False))

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(summary["scheme"], summary["cct_over_bound"], color="tab:blue")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("CCT / lower bound")
    ax.set_title("16-host all-to-all, 256 KiB per pair, 100 KB buffers")
    fig.tight_layout()
    fig.savefig(out / "cct.png", dpi=120)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    qfig, qax = plt.subplots(figsize=(6, 3.5))
    for name in SCHEMES:
        # Telemetry: every ToR uplink's queue, one sample per microsecond.
        r = lbsim.run(SCENARIO, set={"load_balancing.scheme": name, **TELEMETRY})
        fct_us = r.flows["fct_ps"].dropna().astype(float).sort_values() / 1e6
        ax.step(fct_us, [(i + 1) / len(fct_us) for i in range(len(fct_us))], label=name)
        queue = r.ports.groupby("t_end_ps")["queue_mean_bytes"].mean()
        qax.plot(queue.index.astype(float) / 1e6, queue.values / 1e3, label=name, linewidth=1)
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fct_cdf.png", dpi=120)
    qax.set_xlabel("time (us)")
    qax.set_ylabel("mean ToR-uplink queue (KB)")
    qax.legend(fontsize=8)
    qfig.tight_layout()
    qfig.savefig(out / "queue.png", dpi=120)
    print(f"wrote {out / 'cct.png'}, {out / 'fct_cdf.png'} and {out / 'queue.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("results/examples"))
