"""Feed-health faults (rules.md "Feed health (version 2)"), registered in
:data:`pitwatch.simulator.faults.REGISTRY`; the registry of devices the simulator writes.

* ``SHOE_SILENT`` (baccarat, three_bet_poker, combate; a pack): the shoe is
  unplugged for one pack — it writes nothing of it (no ``shoe_loaded``,
  ``card_drawn``, ``cut_card_drawn`` or ``shoe_emptied``) while the terminal
  deals it as usual — and is plugged back for the next.  Never the table's
  first pack: a shoe has then written for the table earlier, so the ground
  truth holds with the registry and without it.  Its ``seq`` does not jump
  (the shoe wrote nothing: nothing was lost).
* ``UNKNOWN_DEVICE`` (every game; a pack): a rogue shuffler that is not in
  the registry reports the pack's ``shuffle_completed`` instead of the
  table's own shuffler (or the back-room one): the 2023 hijack.  Its events
  are a good report, so nothing else fires; once per table (the rule raises
  one finding per table and device).  The ground truth holds when the run
  is given the registry (``OUT/devices.csv``); without one the rule is off.

``OUT/devices.csv`` (:func:`registry_rows`, written by :func:`pitwatch.simulator.floor.simulate`)
lists every device of the floor but the rogue ones: each terminal and shoe
for its table, each shuffler for every table it serves, the back-room
baccarat shufflers as ``*``; from the gaming day before the simulation
starts (device clocks are up to a second off), open-ended.
"""
from __future__ import annotations

from pitwatch.schemas.contract import SHOE_GAMES
from pitwatch.simulator.faults import ALL, injects
from pitwatch.simulator.packs import PackPrep


@injects("SHOE_SILENT", *SHOE_GAMES)
def _shoe_silent(table, prep: PackPrep) -> bool:
    if table.shoe_port is None or table.pack_no < 2:
        return False
    table.shoe_quiet = True          # TableSim.device drops the shoe's events until the next pack
    table.faults.fire("SHOE_SILENT", "unplugged_for_a_pack", [("SHOE_SILENT", prep.key())])
    return True


@injects("UNKNOWN_DEVICE", *ALL)
def _unknown_device(table, prep: PackPrep) -> bool:
    rogue = table.cfg.rogue
    if rogue is None or table.rogue_used or not (prep.record_shuffle and prep.has_checker):
        return False
    table.rogue_used = True
    prep.flags["rogue"] = True       # emit_shuffle: the rogue device writes the pack's shuffler report
    table.faults.fire("UNKNOWN_DEVICE", "rogue_shuffler", [("UNKNOWN_DEVICE", {"device_id": rogue.dev.device_id})])
    return True


def registry_rows(sims, from_day: str) -> list[tuple]:
    """The registry rows of the floor's devices (rogue devices left out), sorted."""
    rows = set()
    for sim in sims:
        cfg = sim.cfg
        for port, source in ((cfg.terminal, "dealer"), (cfg.shoe, "shoe"), (cfg.shuffler, "shuffler")):
            if port is not None:
                rows.add((port.dev.device_id, source, cfg.table_id, from_day, None))
        if cfg.backroom is not None:
            rows.add((cfg.backroom.dev.device_id, "shuffler", "*", from_day, None))
    return sorted(rows)
