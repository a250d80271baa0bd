"""``pitwatch simulate``: write a realistic simulated floor, with injected faults and their ground truth."""
from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path

import click

from pitwatch.cli.common import StrictCommand, UserError
from pitwatch.schemas.contract import GAMES as GAME_NAMES
from pitwatch.simulator.floor import DEFAULT_TABLES as _DEFAULT_TABLES
from pitwatch.wording import plural

DEFAULT_TABLES = ",".join(f"{game}={n}" for game, n in _DEFAULT_TABLES.items())
DEFAULT_START = "2026-11-28T20:00:00Z"


def _tables(ctx, param, value: str) -> dict[str, int]:
    tables: dict[str, int] = {}
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        game, sep, count = part.partition("=")
        game = game.strip()
        if game not in GAME_NAMES:
            raise click.BadParameter(f"unknown game {game!r}; games: {', '.join(GAME_NAMES)}")
        try:
            n = int(count) if sep else 1
        except ValueError:
            raise click.BadParameter(f"{part!r}: the number of tables must be a whole number") from None
        if n < 0 or n > 999:
            raise click.BadParameter(f"{part!r}: the number of tables must be between 0 and 999")
        tables[game] = tables.get(game, 0) + n
    if not any(tables.values()):
        raise click.BadParameter("no tables: give at least one, e.g. baccarat=2")
    return tables


def _start(ctx, param, value: str) -> _dt.datetime:
    try:
        when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO time, e.g. 2026-11-28T20:00:00Z") from None
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)


def _rate(ctx, param, value):
    if value is None:
        return None
    from pitwatch.simulator.faults import parse_rate

    try:
        return parse_rate(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _faults(ctx, param, values) -> dict[str, float]:
    from pitwatch.simulator.faults import FAULT_NAMES, QUIET, parse_rate

    rates: dict[str, float] = {}
    for item in values:
        name, sep, rate = item.partition("=")
        name = name.strip().upper()
        if name not in FAULT_NAMES and name not in QUIET:
            raise click.BadParameter(f"unknown rule {name!r}; see --list-faults")
        try:
            rates[name] = parse_rate(rate) if sep else 1.0
        except ValueError as exc:
            raise click.BadParameter(f"{item!r}: {exc}") from None
    return rates


def _list_faults(ctx, param, value) -> None:
    if not value or ctx.resilient_parsing:
        return
    from pitwatch.simulator.faults import QUIET, SPECS

    width = max(len(n) for n in (*SPECS, *QUIET))
    for spec in (*SPECS.values(), *QUIET.values()):
        click.echo(f"{spec.name:<{width}}  {','.join(spec.games):<48}  {spec.summary}")
    ctx.exit()


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch simulate --out day/
  pitwatch simulate --out day/ --tables baccarat=8,stud=2 --hours 24 --seed 7
  pitwatch simulate --out day/ --faults 0.01
  pitwatch simulate --out day/ --fault BURN_SKIPPED=1 --fault PAYOUT=0.05
  pitwatch simulate --out days/ --hours 30 --reuse-ids --fault PACK_COMPOSITION=0.2
  pitwatch simulate --out skew/ --tables baccarat=2 --fault HOLD_SKEW=0.8
  pitwatch simulate --list-faults
""")
@click.option("--out", "out", required=True, metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Empty (or new) folder for OUT/<gaming day>/<device>.jsonl, OUT/truth.jsonl and the "
                   "device registry OUT/devices.csv.")
@click.option("--tables", default=DEFAULT_TABLES, show_default=True, callback=_tables, metavar="GAME=N,…",
              help="Tables per game: " + ", ".join(GAME_NAMES) + ".")
@click.option("--hours", type=click.FloatRange(min=0.05, max=24 * 31), default=8.0, show_default=True,
              help="Hours of play from --start.")
@click.option("--start", default=DEFAULT_START, show_default=True, callback=_start, metavar="ISO-TIME",
              help="When the tables open (a fixed default, so runs are reproducible).")
@click.option("--seed", type=int, default=1, show_default=True, help="Same seed and options, same bytes.")
@click.option("--faults", "mixed", default=None, callback=_rate, metavar="RATE",
              help="Inject every fault of a rule, each at RATE per opportunity (0..1); not HOLD_SKEW.")
@click.option("--fault", "per_fault", multiple=True, callback=_faults, metavar="RULE_ID=RATE",
              help="Inject one fault at RATE per opportunity (1 = every opportunity); repeatable; "
                   "overrides --faults for that rule.  HOLD_SKEW=P: the first baccarat table's first dealer "
                   "arranges P of his coups for a player (no finding; OUT/hold_skew.json).")
@click.option("--list-faults", is_flag=True, expose_value=False, is_eager=True, callback=_list_faults,
              help="List the injectable faults (rule_id, games, what is done) and exit.")
@click.option("--reuse-ids", is_flag=True,
              help="Use pack and round ids again, as real floors do (contract 2.1): each table numbers "
                   "its packs from 1 every gaming day, wrapping at 2 (P-BAC01-01, -02, -01, …), and its "
                   "rounds from 1 with every pack. The same events as without it but for those ids; "
                   "OUT/truth.jsonl gives each id's use (pack_use, round_use) and OUT/reused_ids.csv "
                   "the id every pack and round would have had without it.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Processes to use (default: the CPUs); the files written do not depend on it.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def simulate(out: Path, tables, hours, start, seed, mixed, per_fault, reuse_ids, workers, quiet):
    """Write a realistic simulated gaming floor: one JSONL file per device per
    gaming day, exactly in the event contract, with procedure faults injected
    on request, OUT/truth.jsonl listing every finding they must raise and
    OUT/devices.csv, the floor's device registry (for pitwatch run --devices).
    """
    from pitwatch.simulator import build_rates
    from pitwatch.simulator import simulate as run

    if out.exists() and any(out.iterdir()):
        raise click.UsageError(f"{out} is not empty: choose a new or empty folder")
    rates = build_rates(mixed, per_fault)
    progress = None
    if not quiet and sum(tables.values()) * hours >= 40:
        shown = [-1]

        def progress(fraction: float) -> None:
            tenth = int(fraction * 10)
            if tenth > shown[0]:
                shown[0] = tenth
                click.echo(f"pitwatch: simulated {tenth * 10}% of {hours:g} h", err=True)
    try:
        s = run(out, tables=tables, hours=hours, start=start, seed=seed, faults=rates, progress=progress,
                workers=workers or min(os.cpu_count() or 1, 8), reuse_ids=reuse_ids)
    except (OSError, ValueError) as exc:
        raise UserError(str(exc)) from None
    days = ", ".join(s.gaming_days) if len(s.gaming_days) <= 3 else f"{s.gaming_days[0]} … {s.gaming_days[-1]}"
    click.echo(f"wrote {plural(s.files, 'file')} to {out} (gaming day{'s' if len(s.gaming_days) != 1 else ''} {days})")
    click.echo(f"events: {s.events:,} from {plural(s.devices, 'device')} on {plural(s.tables, 'table')} "
               f"in {s.seconds:.1f} s ({s.events_per_second:,.0f} events/s)")
    if s.faults:
        injected = ", ".join(f"{k} {v}" for k, v in s.faults.items())
        click.echo(f"faults injected: {sum(s.faults.values())} ({injected})")
    else:
        click.echo("faults injected: 0 (a clean floor)")
    click.echo(f"findings they must raise: {s.findings} -> {out / 'truth.jsonl'}")
    if rates.get("HOLD_SKEW"):
        from pitwatch.simulator.hold_skew import TRUTH_FILE

        click.echo(f"a dealer working with a player (HOLD_SKEW, no finding): {out / TRUTH_FILE}")
    click.echo(f"device registry: {out / 'devices.csv'} (pitwatch run … --devices {out / 'devices.csv'})")
    if reuse_ids:
        from pitwatch.simulator.reuse import ID_MAP_FILE

        click.echo(f"pack and round ids reused; the id each would have had without --reuse-ids: {out / ID_MAP_FILE}")
    sys.stdout.flush()
