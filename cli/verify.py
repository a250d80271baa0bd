"""``pitwatch verify``: is the lake exactly what pitwatch's writers put in it?"""
from __future__ import annotations

import json

import click

from pitwatch.cli import exits
from pitwatch.cli.common import StrictCommand, UserError, setting_option, setup_logging
from pitwatch.lake import Lake
from pitwatch.wording import plural


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch verify --lake /data/lake
  pitwatch verify --lake /data/lake --anchor /worm/pitwatch/anchor.jsonl --key /etc/pitwatch/anchor.key
  pitwatch verify --lake /data/lake --format json      (for a monitoring system)
  pitwatch verify --lake /data/lake --since /worm/pitwatch/anchor.jsonl --key /etc/pitwatch/anchor.key
                                                       (nightly: only what is new since the last anchored run)
  pitwatch verify --lake s3://casino-lake/floor        (an object store: the standard AWS variables)
""")
@setting_option("lake", required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for a person, json (one object) for a monitoring system.")
@setting_option("anchor", metavar="FILE")
@setting_option("anchor_key", metavar="FILE")
@click.option("--since", "since", metavar="FILE", default=None,
              help="Verify only what came after the last entry of this anchor file (signature checked with "
                   "--key): that record and everything before it are taken as verified by an earlier full "
                   "verify (docs/verify.md).")
def verify(lake, fmt, anchor, anchor_key, since):
    """Recompute the lake's hash chain and every file of every table (the
    current version and the retained history), and name every file changed,
    removed or added outside pitwatch, every commit no run recorded and every
    broken link.  With --anchor, check the lake against the chain heads kept
    there; with --key, check the anchor's signatures too.  What an interrupted
    run left (a run with no end, its files and commits, its staging) is listed
    apart: it is not tampering.  Files pitwatch vacuum removed (retention) are
    counted, not missing: its runs record lists each with its SHA-256; so are
    the alerts files a watcher's compaction replaced: its record names them and
    the digest of their rows, which the new file's must match.  The
    reviews' own chain (each review links to the one before: an edited or
    removed review is named) and the files the lake keeps
    (every device registry and dealers' roster a run or an import used,
    named by their SHA-256) are checked too.  With
    --since, only the records, commits, data files and checkpoints that came
    after the anchor's last entry.  Exit 0 when the lake is intact, 5 when it is
    not (docs/verify.md).
    """
    setup_logging(quiet=True)
    from pitwatch.lake import anchor as anchors
    from pitwatch.lake.parquet import LakeError
    from pitwatch.lake.verify import verify as check

    lake = Lake.at(lake)
    ignored = None
    if since and anchor:
        source = click.get_current_context().get_parameter_source("anchor")
        if source == click.core.ParameterSource.COMMANDLINE:
            raise UserError("--since and --anchor go apart: --anchor checks every entry against the whole chain, "
                            "--since starts after the last one")
        anchor, ignored = None, anchor          # the configured anchor (PITWATCH_ANCHOR …): --since wins
    if anchor_key and not (anchor or since):
        raise UserError("--key goes with --anchor or --since (it checks the anchor's signatures)")
    try:
        key = anchors.read_key(anchor_key, lake) if anchor_key else None
        report = check(lake, anchor, key, since=since)
        if ignored:
            report.notes.append(f"the configured anchor {ignored} was not checked entry by entry: --since")
    except (LakeError, anchors.AnchorError) as exc:
        raise UserError(str(exc)) from None
    except PermissionError as exc:      # e.g. the state table's files are the lake owner's only
        raise UserError(f"permission denied: {exc.filename or exc} (run verify as the lake's owner, or with "
                        "read access to every file of the lake)") from None
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(render(report))
    if not report.intact:
        raise SystemExit(exits.NOT_INTACT)


def render(report) -> str:
    from pitwatch.cli.render import visible as escape

    verdict = "intact" if report.intact else f"NOT INTACT: {plural(len(report.problems), 'problem')}"
    lines = [f"lake {escape(report.lake)}: {verdict}"]
    for p in report.problems:
        lines.append(f"  {p.kind:<17} {escape(p.what)}: {escape(p.detail)}")
    if report.leftovers:
        lines.append(f"left by interrupted runs (not tampering; the next run cleans up): "
                     f"{plural(len(report.leftovers), 'item')}")
        for p in report.leftovers:
            lines.append(f"  {p.kind:<17} {escape(p.what)}: {escape(p.detail)}")
    for note in report.notes:
        lines.append(f"note: {escape(note)}")
    c = report.checked
    retained = ""
    if c.get("retention_removed"):
        through = c.get("retention_removed_through")
        retained = (f"; {plural(c['retention_removed'], 'file')} removed by retention"
                    + (f" (gaming days up to {through})" if through else ""))
    if report.since:
        s = report.since
        lines.append(f"since runs version {s['runs_version']} (run {escape(s['run_id'])}, anchored "
                     f"{escape(str(s['anchored_at']))}, "
                     f"{escape(s['anchor'])} line {s['line']}): what came before it taken as verified")
    lines.append(f"checked {plural(c['tables'], 'table')}, {plural(c['commits'], 'commit')}, "
                 f"{plural(c['data_files'], 'data file')}, {plural(c['runs_records'], 'runs record')}{retained}")
    if report.head:
        h = report.head
        lines.append(f"chain head {h['record_sha256']} (runs version {h['runs_version']}, run {h['run_id']}, "
                     f"{escape(h['status'] or '')})")
    return "\n".join(lines)
