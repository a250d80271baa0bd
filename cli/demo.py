"""``pitwatch demo``: simulate a small gaming day, run the batch on it, show the findings."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import click

from pitwatch.cli.common import StrictCommand, UserError, setup_logging
from pitwatch.cli.render import render
from pitwatch.lake import Lake
from pitwatch.wording import plural


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch demo
  pitwatch demo --out /tmp/pitwatch-demo --faults 0.05 --seed 7
""")
@click.option("--out", default="demo", show_default=True, metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the simulated feeds (DIR/feeds) and the lake (DIR/lake); replaced if it exists.")
@click.option("--hours", default=2.0, show_default=True, type=click.FloatRange(0.1, 24), help="Hours of play.")
@click.option("--faults", default=0.02, show_default=True, type=click.FloatRange(0, 1),
              help="Rate of every injectable procedure fault, per opportunity.")
@click.option("--seed", default=1, show_default=True, type=int, help="Random seed of the simulated day.")
def demo(out, hours, faults, seed):
    """The first command a newcomer runs: simulate a dozen tables of all six
    games for two hours with procedure faults injected, replay the day with
    the nightly batch, print the findings by rule next to the faults that
    were injected, and end with pitwatch verify (the lake's hash chain and
    files: exit 5 if it is not intact).
    """
    setup_logging(quiet=True)
    from pitwatch.config import SEVERITIES
    from pitwatch.inputs.devices import load_registry
    from pitwatch.pipelines.batch import run_batch
    from pitwatch.simulator import DEFAULT_TABLES, build_rates, simulate  # every game of the contract
    from pitwatch.simulator.truth import compare, lake_findings, read_truth

    began = time.perf_counter()
    if out.exists():
        if not (out / "feeds").is_dir() and any(out.iterdir()):
            raise UserError(f"{out} exists and is not a pitwatch demo folder; choose another --out")
        shutil.rmtree(out)
    feeds, lake = out / "feeds", out / "lake"
    click.echo(f"1/4 simulating {sum(DEFAULT_TABLES.values())} tables for {hours:g} h "
               f"(faults at {faults:g} per opportunity) → {feeds}")
    sim = simulate(feeds, tables=DEFAULT_TABLES, hours=hours, seed=seed, faults=build_rates(faults, None), workers=2)
    click.echo(f"    {plural(sim.events, 'event')} from {plural(sim.devices, 'device')}; "
               f"{plural(sim.findings, 'finding')} must be raised")
    days = sorted(str(d) for d in feeds.iterdir() if d.is_dir())   # the day folders, not truth.jsonl
    registry = feeds / "devices.csv"       # the simulator's device registry: SHOE_SILENT, UNKNOWN_DEVICE
    click.echo(f"2/4 running the batch: pitwatch run {' '.join(days)} --devices {registry} --lake {lake}")
    summary = run_batch(days, Lake.at(lake), devices=load_registry(str(registry)))
    click.echo(f"    {summary.lines_read:,} lines = accepted {summary.accepted:,} + rejected {summary.rejected:,}"
               f" + duplicates {summary.duplicates:,}; {plural(summary.rows['rounds'], 'round')}, "
               f"{plural(summary.rows['packs'], 'pack')}, {plural(summary.findings, 'finding')}")
    click.echo("3/4 findings by rule, next to the injected faults' ground truth:\n")
    result = compare(lake_findings(Lake.at(lake)), read_truth(feeds / "truth.jsonl"))
    rows = [[c.rule_id, c.severity, c.found, c.expected, "yes" if c.matches else "NO"]
            for c in sorted(result.values(), key=lambda c: (SEVERITIES.index(c.severity), c.rule_id))]
    click.echo(render(["rule_id", "severity", "found", "injected", "match"], rows, "table"))
    matched = sum(c.matches for c in result.values())
    click.echo(f"{matched} of {plural(len(result), 'rule')} {'matches' if len(result) == 1 else 'match'} the ground "
               f"truth; done in {time.perf_counter() - began:.0f} s.")
    click.echo(f"\nExplore the lake:\n  pitwatch query findings_by_rule --lake {lake} "
               f"--param from_day={summary.gaming_days[0]} --param to_day={summary.gaming_days[-1]}\n"
               f"  pitwatch sql \"select rule_id, table_id, round_id, actual from findings limit 10\" --lake {lake}")
    click.echo(f"\n4/4 checking the evidence: pitwatch verify --lake {lake}")
    from pitwatch.cli.verify import render as render_verify
    from pitwatch.lake.verify import verify

    report = verify(Lake.at(lake))
    click.echo("    " + render_verify(report).replace("\n", "\n    "))
    if not report.intact:
        from pitwatch.cli.exits import NOT_INTACT

        raise SystemExit(NOT_INTACT)
