"""Reading: hosts side by side, the comparison tunebench computed (harness/analysis/hosts.h) and
handed over as JSON (`tunebench compare --hosts … --format json`; `tunebench report` writes it
as hosts.json and passes it as --hosts-json)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .load import ReportError

@dataclass
class Figure:
    """A number with its interval as tunebench computed and printed it; value None where there is
    none (text then says why, e.g. "not measured")."""

    value: float | None
    lo: float | None
    hi: float | None
    text: str


@dataclass
class HostRow:
    """One host on one workload."""

    workload: str  # "gpt tiny infer b8"
    host: str
    cores: int | None
    items_per_second: Figure
    per_core: Figure
    items_per_unit: Figure  # items per currency unit at the host's price per hour
    cost_per_million: Figure
    energy: Figure  # joules per item
    samples: int
    processes: int
    run_uuid: str  # its latest run
    runs: int = 1  # its runs behind the figure
    spread: str = ""  # where the run-to-run spread came from: "runs", "calibrated floor", "unknown"


@dataclass
class HostComparison:
    suite: str = ""
    rows: list = field(default_factory=list)  # of HostRow, workloads in order, best host first
    benchmarks: dict = field(default_factory=dict)  # workload -> "experiment / arm" compared
    rankings: dict = field(default_factory=dict)  # workload -> [rank text]
    price_rankings: dict = field(default_factory=dict)
    pairs: dict = field(default_factory=dict)  # workload -> [pair line]
    priced: bool = False  # some host has a price
    notes: list = field(default_factory=list)
    unavailable: str = ""  # why tunebench could not compare, when it could not

    @property
    def hosts(self) -> list[str]:
        return sorted({r.host for r in self.rows})


def _figure(value) -> Figure:
    value = value if isinstance(value, dict) else {}
    nums = [value.get(k) if isinstance(value.get(k), (int, float)) and not isinstance(value.get(k), bool) else None
            for k in ("value", "lo", "hi")]
    return Figure(*nums, str(value.get("text") or ""))


def load_host_comparison(path: str) -> HostComparison:
    """The JSON `tunebench compare --hosts … --format json` prints (or {"unavailable": why}, which
    `tunebench report` writes when there is nothing to compare)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ReportError(f"--hosts-json {path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise ReportError(f"--hosts-json {path}: not valid JSON ({error}); write it with "
                          "`tunebench compare --hosts H1 H2 --format json`") from None
    if not isinstance(data, dict) or not ("workloads" in data or "unavailable" in data):
        raise ReportError(f"--hosts-json {path}: not a comparison of `tunebench compare --hosts H1 H2 --format json`")
    if "unavailable" in data:
        return HostComparison(unavailable=str(data["unavailable"]))
    # A host's name: its hostname, or "hostname (CLASS8)" where two compared hosts share one
    # (comparisons written before names were given carry the hostname alone).
    def name(h: dict):
        return h.get("name") or h.get("hostname")

    hosts = {name(h): h for h in data.get("hosts", []) if isinstance(h, dict)}
    comparison = HostComparison(suite=str(data.get("suite", "")), notes=[str(n) for n in data.get("notes", [])])
    comparison.priced = any(isinstance(h.get("price_per_hour"), (int, float)) for h in hosts.values())
    for w in data.get("workloads", []):
        label = str(w.get("label", "?"))
        comparison.benchmarks[label] = f"{w.get('experiment', '?')} / {w.get('arm', '?')}"
        comparison.rankings[label] = [str(r.get("text", "")) for r in w.get("ranking", [])]
        comparison.price_rankings[label] = [str(r.get("text", "")) for r in w.get("price_ranking", [])]
        comparison.pairs[label] = [str(p.get("line", "")) for p in w.get("pairs", [])]
        order = [h for r in w.get("ranking", []) for h in r.get("hosts", [])]
        for f in sorted(w.get("hosts", []), key=lambda f: order.index(name(f))
                        if name(f) in order else len(order)):
            host = hosts.get(name(f), {})
            comparison.rows.append(HostRow(
                label, str(name(f) or "?"), host.get("cores"), _figure(f.get("items_per_second")),
                _figure(f.get("items_per_second_per_core")), _figure(f.get("items_per_currency_unit")),
                _figure(f.get("cost_per_million_items")), _figure(f.get("energy_joules_per_item")),
                int(f.get("samples", 0)), int(f.get("processes", 0)), str(host.get("run", "")),
                int(f.get("runs", 1)), str(f.get("spread", ""))))
    return comparison

