"""``pitwatch rules``: the rule catalogue."""
from __future__ import annotations

import click

from pitwatch.cli.common import StrictCommand
from pitwatch.cli.render import format_option, render
from pitwatch.config import SEVERITIES
from pitwatch.schemas.contract import GAMES


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch rules
  pitwatch rules --game baccarat
  pitwatch rules --severity critical --format csv
""")
@click.option("--game", type=click.Choice(GAMES), help="Only the rules that apply to this game.")
@click.option("--severity", type=click.Choice(SEVERITIES),
              help="Only the rules of this severity.")
@format_option
def rules(game, severity, fmt):
    """Every rule pitwatch checks: rule_id, title, severity, games, procedure source, summary.

    The same catalogue is the lake's `rules` table, for joins with findings.
    With --game, `source` is that game's one procedure reference (the one its
    findings cite); without, every reference of the rule.
    """
    from pitwatch.rules.catalog import RULES

    rows = [r for r in RULES if (game is None or game in r.games) and (severity is None or r.severity == severity)]
    columns = ["rule_id", "title", "severity", "games", "source", "summary"]
    cells = [[r.source_for(game) if c == "source" and game else getattr(r, c) for c in columns] for r in rows]
    click.echo(render(columns, cells, fmt), nl=False)
