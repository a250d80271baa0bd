"""``pitwatch query``: a named investigation from ``queries/*.sql`` with bound parameters."""
from __future__ import annotations

import click

from pitwatch.cli.common import StrictCommand, UserError, user_errors
from pitwatch.cli.render import format_option, render, visible
from pitwatch.cli.sql import (
    as_of_option,
    dealers_option,
    lake_answers,
    limit_options,
    memory_bound,
    open_lake,
    print_answer,
    rows_to_fetch,
    shown,
    time_options,
)
from pitwatch.config import SETTINGS
from pitwatch.lake import Lake


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch query --list
  pitwatch query dealer_rule_repeats --lake lake --param rule_id=BURN_SKIPPED --param to_day=2026-11-28 --dealers dealers.csv
  pitwatch query round_replay --lake lake --param table_id=BAC-01 --param round_id=BAC-01-0054 --format text
  pitwatch query pack_custody --lake lake --param table_id=BAC-01 --param pack_id=P-BAC01-01 --local
  pitwatch query findings_by_rule --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28 --format csv
  pitwatch query findings_by_rule --lake lake --param from_day=2026-11-28 --param to_day=2026-11-28 --as-of 2026-11-29T07:00:00Z
""")
@click.argument("name", required=False)
@click.option("--lake", metavar="DIR", help=SETTINGS["lake"].help)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="A parameter of the query (repeat for each); see --list for names and types.")
@click.option("--list", "list_", is_flag=True, help="List the investigations with their parameters.")
@click.option("--video-pad", type=click.IntRange(0, 3600), metavar="SECONDS",
              help="Seconds of video before and after a finding's evidence (its video_from/video_to; "
                   "queries with a video_pad parameter, default 30).")
@format_option
@dealers_option
@limit_options
@time_options
@as_of_option
@user_errors
def query(name, lake, params, list_, fmt, dealers, timeout, limit, max_rows, max_bytes, max_memory, video_pad, local,
          show_tz, as_of):
    """Run the investigation NAME (one of queries/*.sql) over the lake.

    Parameter values are typed (date YYYY-MM-DD, int in ASCII digits within
    the range --list shows, string) and bound by DuckDB, never pasted into
    the SQL; a wrong one is refused (exit 2) before the lake is opened.
    `pitwatch query --list` shows every investigation, what it answers and
    its parameters (those with "= value" have a default).  --timeout,
    --max-rows, --max-bytes and --max-memory bound the run as for
    `pitwatch sql` (exit 3); --limit N shows the first N rows (exit 0).

    \b
    An empty answer whose table, round, pack, rule or severity is not in the
    lake says so on stderr, with the nearest real value, and exits 0:
      no table bac-01; did you mean BAC-01?
      no round R-0014; round ids look like BAC-01-0014
    --local shows every time in its table's local time (the query's
    table_id for round_replay and pack_custody), --show-tz in one zone, as for
    `pitwatch sql`; --as-of reads the lake as an earlier run left it, as
    for `pitwatch sql`.
    """
    from pitwatch.queries.catalog import get_query, load_queries

    if list_:
        if name or params:
            raise click.UsageError("--list takes no NAME or --param")
        rows = [[q.name, [p.signature() for p in q.params], q.description] for q in load_queries().values()]
        click.echo(render(["name", "parameters", "description"], rows, fmt), nl=False)
        return
    if not name:
        raise click.UsageError("give the NAME of a query (pitwatch query --list shows them)")
    if not lake:
        raise click.UsageError("Missing option '--lake'.")
    lake = Lake.at(lake)
    from pitwatch.queries.catalog import run_query

    values = parse_params(params)
    if video_pad is not None:
        if "video_pad" in values:
            raise UserError("--video-pad and --param video_pad say the same: give one")
        with lake_answers():
            known = "video_pad" in {p.name for p in get_query(name).params}
        if not known:
            windows = ", ".join(q.name for q in load_queries().values() if "video_pad" in {p.name for p in q.params})
            raise UserError(f"--video-pad: query {name} shows no video window (these do: {windows})")
        values["video_pad"] = str(video_pad)
    with lake_answers():
        bound = get_query(name).bind(values)  # check names, types and ranges before opening the lake
        from pitwatch.queries.hints import LOOKUP_TABLES

        con = open_lake(lake, local, show_tz, dealers, as_of, max_memory=max_memory,
                        statements=(get_query(name).sql, *(f"select * from {t}" for t in LOOKUP_TABLES)))
        try:
            with memory_bound(max_memory):
                answer = shown(run_query(con, name, values, timeout=timeout, max_rows=rows_to_fetch(max_rows, limit),
                                         max_bytes=max_bytes, max_memory=max_memory), local, lake,
                               bound.get("table_id") if isinstance(bound.get("table_id"), str) else None)
                hints = [] if answer.rows else _hints(con, bound, timeout)
                print_answer(answer, fmt, max_rows, max_bytes, limit)
        finally:
            con.close()
    for hint in hints:
        click.echo(visible(hint), err=True)   # a suggestion is the lake's text: shown, not obeyed


def _hints(con, bound: dict, timeout: float) -> list[str]:
    """The empty answer's hints; a look-up that fails or runs out of time gives none (the answer stands)."""
    from pitwatch.queries.errors import LakeQueryError, QueryInterrupted
    from pitwatch.queries.hints import empty_answer_hints

    try:
        return empty_answer_hints(con, bound, timeout=timeout)
    except (LakeQueryError, QueryInterrupted):
        return []


def parse_params(pairs) -> dict[str, str]:
    """``("key=value", …)`` → ``{key: value}``; a pair without ``=`` or a repeated key is an error."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--param {pair!r}: write it as KEY=VALUE")
        if key in out:
            raise UserError(f"--param {key} given twice")
        out[key] = value
    return out
