"""issue 28: ``pitwatch watch`` never dies on its input and never goes deaf (docs/watch.md,
"What is rejected", "The gap wait").  Real ``pitwatch watch`` processes following real files."""
from __future__ import annotations

import collections
import json
import re
import signal
import time

import pytest

from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave

DEALER = "DT-1-BAC-A"
FIVE_MB = 5 * 1024 * 1024


def _crashers(template: str) -> list[str]:
    """The lines that killed ``watch`` (issue 28), made from one of the dealer's genuine lines."""
    row = json.loads(template)
    out = []
    for k, change in enumerate(({"type": ["card_dealt"]}, {"seat": 1e300}, {"ts": "0001-01-01T00:00:00Z"},
                                {"ts": "10000-01-01T00:00:00Z"})):
        bad = {**row, **change, "event_id": f"CRASH-{k}"}
        bad.pop("seq")          # no readable seq: the genuine seqs around stay the device's own
        out.append(json.dumps(bad))
    return out


def _summary(w) -> dict:
    line = next(e for e in reversed(w.errors) if "stopped:" in e)
    num = lambda pat: int(re.search(pat, line).group(1).replace(",", ""))   # noqa: E731
    out = {"lines": num(r"([\d,]+) lines?"), "accepted": num(r"([\d,]+) accepted"),
           "rejected": num(r"([\d,]+) rejected"), "duplicate": num(r"([\d,]+) duplicates?")}
    stale = re.search(r"([\d,]+) stale", line)
    out["stale"] = int(stale.group(1)) if stale else 0
    late = re.search(r"\(([\d,]+) late\)", line)
    out["late"] = int(late.group(1)) if late else 0
    return out


def _adds_up(s: dict) -> None:
    assert s["lines"] == s["accepted"] + s["rejected"] + s["duplicate"] + s["stale"], s


def _lines_in_checkpoint(state) -> int:
    try:
        with open(state / "checkpoint.json", "rb") as f:
            return json.load(f)["rest"]["counts"]["lines"]
    except (OSError, ValueError, KeyError):
        return -1


@pytest.mark.slow
def test_each_crasher_is_rejected_alerts_go_on_and_a_kill_9_restart_resumes(
        tmp_path, scenario, batch_ids, start_watch):
    feeds, lake, state = tmp_path / "feeds", tmp_path / "lake", tmp_path / "state"
    order = interleave(scenario, seed=5)
    half = len(order) // 2
    args = [feeds, "--lake", lake, "--state-dir", state, "--alerts-file", tmp_path / "alerts.jsonl",
            "--finalize-at-stop", "--checkpoint-every", "0.05"]
    w = start_watch(*args)
    append_lines(feeds, order[:half])
    w.caught_up(half)
    before = len(w.alerts)
    crashers = _crashers(scenario[DEALER][20])
    append_lines(feeds, [(DEALER, c) for c in crashers])
    # a 5 MB line, written in two parts: its start has no line end for a while
    with open(feeds / f"{DEALER}.jsonl", "a") as f:
        f.write('{"event_id": "HUGE", "pad": "' + "x" * (3 * 1024 * 1024))
        f.flush()
        time.sleep(0.5)
        f.write("x" * (FIVE_MB - 3 * 1024 * 1024) + '"}\n')
    sent = half + len(crashers) + 1
    w.caught_up(sent)
    rest = order[half:]
    third = len(rest) // 3
    append_lines(feeds, rest[:third])
    sent += third
    w.caught_up(sent)
    assert len(w.alerts) > before, "alerts still come after the crashers"
    for k in range(len(crashers)):
        assert any("rejected " in e and f"CRASH-{k}" in e for e in w.errors), k
    rejected = [e for e in w.errors if "rejected " in e and f"{DEALER}.jsonl:" in e]
    assert len(rejected) >= len(crashers) + 1                           # each one said, with its place
    assert any("line longer than" in e for e in rejected)
    w.wait_for(lambda: _lines_in_checkpoint(state) == sent, "a checkpoint after the crashers")
    assert w.stop(signal.SIGKILL) == -signal.SIGKILL
    first = w.alerts

    w = start_watch(*args)                           # the restart meets the crashers again: no death
    append_lines(feeds, rest[third:])
    sent += len(rest) - third
    w.caught_up(sent)
    assert w.stop() == 0
    assert not any("Traceback" in e for e in w.errors)
    assert not any("rejected " in e and "CRASH" in e for e in w.errors)   # not announced again as new
    s = _summary(w)
    _adds_up(s)
    assert s["lines"] == sent
    assert s["rejected"] == len(crashers) + 1 + 1     # the crashers, the 5 MB line, the scenario's own
    ids = [a["finding_id"] for a in first + w.alerts]
    assert sorted(set(ids)) == batch_ids              # every finding: nothing lost to the crashers
    assert max(collections.Counter(ids).values()) == 1   # a checkpoint was taken: nothing repeated
    with open(tmp_path / "alerts.jsonl") as f:
        assert sorted(a["finding_id"] for a in map(json.loads, f) if not a.get("live_only")) == batch_ids


def _jump(scenario, seq: int, at: int = 40) -> tuple[list, list, list]:
    """The dealer's lines split at ``at``, with a forged copy of a seated player numbered ``seq``."""
    lines = scenario[DEALER]
    forged = {**json.loads(lines[1]), "event_id": "FORGED-JUMP", "seq": seq}
    return lines[:at], [json.dumps(forged)], lines[at:]


@pytest.mark.slow
@pytest.mark.parametrize("jump", ["+1000", 2 ** 63 - 1, 2 ** 64 - 1])
def test_a_seq_jump_never_mutes_the_device(tmp_path, scenario, batch_rule_of, start_watch, jump):
    """issue 28: one forged seq jump muted the terminal's next lines.  Now the jump waits
    --gap-wait, is a SEQ_GAP, and every later genuine line is replayed (in order, as late lines
    once the wait is over); 2**64 - 1 is beyond the contract (seq < 2**63): a reject, no jump."""
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    head, forged, tail = _jump(scenario, 40 + 1000 if jump == "+1000" else jump)
    others = [(d, line) for d, lines in scenario.items() if d != DEALER for line in lines]
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop", "--gap-wait", "0.5")
    append_lines(feeds, others + [(DEALER, x) for x in head + forged + tail[:3]])   # 3 within the wait
    w.caught_up(len(others) + len(head) + 1 + 3)        # "caught up": nothing held, the wait is over
    append_lines(feeds, [(DEALER, x) for x in tail[3:]])                          # the rest: late
    w.caught_up(len(others) + len(head) + 1 + len(tail))
    assert w.stop() == 0
    s = _summary(w)
    _adds_up(s)
    valid = jump != 2 ** 64 - 1
    assert s["stale"] == 0 and s["duplicate"] == 4                    # the scenario's re-sent shoe lines
    assert s["rejected"] == 1 + (not valid)                            # the scenario's; the 2**64-1 line
    assert s["late"] == (len(tail) - 3 if valid else 0)               # the genuine lines after the wait
    assert s["accepted"] == s["lines"] - s["rejected"] - s["duplicate"]
    batch_gaps = sorted(f for f, r in batch_rule_of.items() if r == "SEQ_GAP")
    live_gaps = [a for a in w.alerts if a["rule_id"] == "SEQ_GAP"]
    assert [a for a in w.alerts if a["rule_id"] == "DEVICE_SILENT"] == []   # both played throughout
    # every other finding of the floor is raised: the device's later lines were all replayed
    assert sorted(a["finding_id"] for a in w.alerts if a["rule_id"] != "SEQ_GAP") == \
        sorted(f for f, r in batch_rule_of.items() if r != "SEQ_GAP")
    assert set(batch_gaps) <= {a["finding_id"] for a in live_gaps}   # the scenario's lost line (seq 2)
    jumps = [a for a in live_gaps if a["finding_id"] not in batch_gaps]
    if valid:   # the jump is one SEQ_GAP, from the last seq before the wait ran out to the forged one
        assert len(jumps) == 1 and jumps[0]["device_id"] == DEALER
        assert "FORGED-JUMP" in [e["event_id"] for e in jumps[0]["evidence"]]
        first_missing = json.loads(tail[2])["seq"] + 1
        assert f"numbered {first_missing}" in jumps[0]["expected"]
    else:
        assert jumps == []
