"""``pitwatch demo``: simulate a small gaming day, run the batch on it, show the findings, and close
the loop an analyst closes: review two findings, list what is still open, one dealer's scorecard and
the floor's hold against theory, verify the lake, write the day's compliance report beside it and
say how to open the console (``pitwatch serve``) as a demo user."""
from __future__ import annotations

import secrets
import shlex
import shutil
import time
from pathlib import Path

import click

from pitwatch.cli.common import StrictCommand, UserError, setup_logging
from pitwatch.cli.render import render
from pitwatch.lake import Lake
from pitwatch.wording import plural

STEPS = 10
ANALYST = "M.Ortiz"       # the demo's reviewer (--by)
CONSOLE_USER = "demo"      # the console user the demo creates (a reviewer), its password drawn at random


def _step(n: int, text: str) -> None:
    click.echo(f"\n{n}/{STEPS} {text}" if n > 1 else f"{n}/{STEPS} {text}")


def as_typed(ctx: click.Context, command: click.Command, name: str, args: list[str]) -> None:
    """Print ``pitwatch NAME ARGS`` as an analyst would type it, then run that very command in this
    process (its own parsing, checks, lock and output: the code the command line runs, not a copy).
    A refusal or a cut answer ends the demo as it would end the command (exit 2, 3, …)."""
    click.echo(f"    $ {shlex.join(['pitwatch', name, *args])}")
    with command.make_context(name, list(args), parent=ctx.find_root()) as sub:
        command.invoke(sub)


def _to_review(lake: Path) -> tuple[dict, dict] | None:
    """Two open findings to review, read from the lake as ``open_findings`` lists them (most severe,
    oldest first): the first with a dealer (to confirm: a dealer error has a dealer) and the next
    one after it (to dismiss); each with its video window from ``findings_video``, in the table's
    own time.  None when the floor raised no such pair (``--faults 0``)."""
    from pitwatch.lake.settings import display_zones
    from pitwatch.queries.catalog import run_query
    from pitwatch.queries.lake_views import connect, in_table_time

    lake_zone, zones = display_zones(Lake.at(lake))
    con = connect(Lake.at(lake))
    try:
        columns, rows = run_query(con, "open_findings", {})
        found = [dict(zip(columns, r)) for r in rows]
        confirm = next((f for f in found if f["dealer_id"]), None)
        if confirm is None or len(found) < 2:
            return None
        dismiss = next(f for f in found if f is not confirm)
        for f in (confirm, dismiss):
            video = in_table_time(run_query(con, "findings_video", {"gaming_day": str(f["gaming_day"])}),
                                  lake_zone, zones)
            (window,) = [dict(zip(video.columns, r)) for r in video.rows if r[-1] == f["finding_id"]]
            f["video"] = f"{f['table_id']} camera, {window['video_from']} – {window['video_to']}"
        return confirm, dismiss
    finally:
        con.close()


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch demo
  pitwatch demo --out /tmp/pitwatch-demo --faults 0.05 --seed 7
  pitwatch demo --out /tmp/pitwatch-demo --hold-skew 0
""")
@click.option("--out", default="demo", show_default=True, metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the simulated feeds (DIR/feeds) and the lake (DIR/lake); replaced if it exists.")
@click.option("--hours", default=2.0, show_default=True, type=click.FloatRange(0.1, 24), help="Hours of play.")
@click.option("--faults", default=0.02, show_default=True, type=click.FloatRange(0, 1),
              help="Rate of every injectable procedure fault, per opportunity.")
@click.option("--hold-skew", default=1.0, show_default=True, type=click.FloatRange(0, 1), metavar="RATE",
              help="HOLD_SKEW: the share of the first baccarat table's first dealer's coups arranged for a "
                   "confederate (no finding; only the hold table shows it); 0 leaves it out.")
@click.option("--seed", default=1, show_default=True, type=int, help="Random seed of the simulated day.")
@click.pass_context
def demo(ctx, out, hours, faults, hold_skew, seed):
    """The first command a newcomer runs: simulate a dozen tables of all six
    games for two hours with procedure faults injected and one dealer working
    with a player (HOLD_SKEW: every coup of theirs arranged), replay the day with the nightly batch, keep the
    floor's dealers' roster in the lake, print the findings by rule next to
    the faults that were injected; then, as an analyst would, review two
    findings (one confirmed, one dismissed), list the findings still open,
    show one dealer's scorecard and the floor's hold against theory, and end
    with pitwatch verify (the lake's hash chain and files, the reviews
    included: exit 5 if it is not intact), the day's compliance report
    (OUT/report-DAY.html) and the pitwatch serve command to open the console,
    with a demo user (a reviewer, its password drawn at random and printed).
    Every step after the batch is printed as the pitwatch command it runs.
    """
    setup_logging(quiet=True)
    from pitwatch.cli.dealers import dealers
    from pitwatch.cli.query import query
    from pitwatch.cli.report import report as report_command
    from pitwatch.cli.review import review
    from pitwatch.config import SEVERITIES
    from pitwatch.inputs.devices import load_registry
    from pitwatch.pipelines.batch import run_batch
    from pitwatch.simulator import DEFAULT_TABLES, build_rates, simulate  # every game of the contract
    from pitwatch.simulator.truth import compare, lake_findings, read_hold_skew, read_truth

    began = time.perf_counter()
    if out.exists():
        if not (out / "feeds").is_dir() and any(out.iterdir()):
            raise UserError(f"{out} exists and is not a pitwatch demo folder; choose another --out")
        shutil.rmtree(out)
    feeds, lake = out / "feeds", out / "lake"
    _step(1, f"simulating {sum(DEFAULT_TABLES.values())} tables for {hours:g} h "
             f"(faults at {faults:g} per opportunity, HOLD_SKEW at {hold_skew:g}) → {feeds}")
    rates = build_rates(faults, {"HOLD_SKEW": hold_skew})
    sim = simulate(feeds, tables=DEFAULT_TABLES, hours=hours, seed=seed, faults=rates, workers=2)
    click.echo(f"    {plural(sim.events, 'event')} from {plural(sim.devices, 'device')}; "
               f"{plural(sim.findings, 'finding')} must be raised")
    for skew in read_hold_skew(feeds):
        click.echo(f"    dealer {skew['dealer_id']} at {skew['table_id']} works with the player of seat "
                   f"{skew['seat']}: {skew['arranged']} of {plural(skew['opportunities'], 'coup')} arranged, "
                   f"no finding (HOLD_SKEW)")
    days = sorted(str(d) for d in feeds.iterdir() if d.is_dir())   # the day folders, not truth.jsonl
    registry = feeds / "devices.csv"       # the simulator's device registry: SHOE_SILENT, UNKNOWN_DEVICE
    _step(2, f"running the batch: pitwatch run {' '.join(days)} --devices {registry} --lake {lake}")
    summary = run_batch(days, Lake.at(lake), devices=load_registry(str(registry)))
    click.echo(f"    {summary.lines_read:,} lines = accepted {summary.accepted:,} + rejected {summary.rejected:,}"
               f" + duplicates {summary.duplicates:,}; {plural(summary.rows['rounds'], 'round')}, "
               f"{plural(summary.rows['packs'], 'pack')}, {plural(summary.findings, 'finding')}")
    _step(3, "keeping the floor's dealers' roster in the lake (every command shows names):")
    as_typed(ctx, dealers, "dealers", ["import", str(feeds / "dealers.csv"), "--lake", str(lake)])
    _step(4, "findings by rule, next to the injected faults' ground truth:\n")
    result = compare(lake_findings(Lake.at(lake)), read_truth(feeds / "truth.jsonl"))
    rows = [[c.rule_id, c.severity, c.found, c.expected, "yes" if c.matches else "NO"]
            for c in sorted(result.values(), key=lambda c: (SEVERITIES.index(c.severity), c.rule_id))]
    click.echo(render(["rule_id", "severity", "found", "injected", "match"], rows, "table"))
    matched = sum(c.matches for c in result.values())
    click.echo(f"{matched} of {plural(len(result), 'rule')} {'matches' if len(result) == 1 else 'match'} the ground "
               f"truth.")

    picked = _to_review(lake)
    skewed = [skew["dealer_id"] for skew in read_hold_skew(feeds)]
    first, last = summary.gaming_days[0], summary.gaming_days[-1]
    if picked is None:
        _step(5, "reviewing two findings: the floor raised fewer than two open findings, one with a dealer "
                 "(--faults 0?): nothing to review")
        dealer, why = (skewed[0], "who works with a player (HOLD_SKEW)") if skewed else (None, "")
    else:
        confirm, dismiss = picked
        _step(5, "reviewing two findings: one confirmed on video, one dismissed")
        as_typed(ctx, review, "review", [
            confirm["finding_id"], "--disposition", "confirmed", "--by", ANALYST, "--reason", "DEALER_ERROR",
            "--note", f"{confirm['title']}: {confirm['actual']}; seen on the video", "--video", confirm["video"],
            "--lake", str(lake)])
        as_typed(ctx, review, "review", [
            dismiss["finding_id"], "--disposition", "dismissed", "--by", ANALYST, "--reason", "OTHER",
            "--note", "the video shows the procedure followed", "--video", dismiss["video"], "--lake", str(lake)])
        dealer, why = confirm["dealer_id"], "whose error was confirmed"
    _step(6, "what is still open, most severe and oldest first, in each table's time (the reviewed are gone):")
    as_typed(ctx, query, "query", ["open_findings", "--lake", str(lake), "--local", "--limit", "5", "--format", "text"])
    if dealer is None:
        _step(7, "a dealer's scorecard: no finding with a dealer and no HOLD_SKEW dealer to show")
    else:
        _step(7, f"the scorecard of dealer {dealer}, {why}:")
        as_typed(ctx, query, "query", ["dealer_scorecard", "--lake", str(lake), "--param", f"from_day={first}",
                                       "--param", f"to_day={last}", "--param", f"dealer_id={dealer}",
                                       "--format", "text"])
    _step(8, "the floor's hold against theory per table and dealer, the most improbable first (z):")
    as_typed(ctx, query, "query", ["hold", "--lake", str(lake), "--param", f"from_day={first}",
                                   "--param", f"to_day={last}", "--limit", "8"])
    _step(9, f"checking the evidence, the reviews included: pitwatch verify --lake {lake}")
    from pitwatch.cli.verify import render as render_verify
    from pitwatch.lake.verify import verify

    report = verify(Lake.at(lake))
    click.echo("    " + render_verify(report).replace("\n", "\n    "))
    if not report.intact:
        from pitwatch.cli.exits import NOT_INTACT

        raise SystemExit(NOT_INTACT)
    _step(10, "the day's compliance report, one self-contained HTML file to hand over:")
    as_typed(ctx, report_command, "report", ["--day", last, "--lake", str(lake), "--out",
                                             str(out / f"report-{last}.html")])
    from pitwatch.console.auth import add_user, default_users_path

    password = secrets.token_urlsafe(12)
    users = default_users_path(str(lake))      # beside the lake, where pitwatch serve looks (as given: demo/lake.users.json)
    add_user(users, CONSOLE_USER, "reviewer", password)
    click.echo(f"\nDone in {time.perf_counter() - began:.0f} s. Open the console (a reviewer, user "
               f"{CONSOLE_USER}, password {password}; its users are in {users}):\n"
               f"  pitwatch serve --lake {lake}        # then http://127.0.0.1:8470\n"
               f"Explore the lake:\n"
               f"  pitwatch query review_log --lake {lake}\n"
               f"  pitwatch incidents --day {last} --lake {lake}\n"
               f"  pitwatch query findings_by_rule --lake {lake} --param from_day={first} --param to_day={last}\n"
               f"  pitwatch sql \"select rule_id, table_id, round_id, actual from findings limit 10\" --lake {lake}")
