"""``pitwatch simulate``: a realistic casino floor, with injected faults and their ground truth.

Pure Python (no Beam).  Entry point: :func:`simulate`; the injectable faults
are listed in :data:`FAULT_NAMES` (``pitwatch.simulator.faults.SPECS``).
"""
from __future__ import annotations

from pitwatch.simulator.faults import FAULT_NAMES, SPECS, build_rates, parse_rate
from pitwatch.simulator.floor import DEFAULT_HOURS, DEFAULT_START, DEFAULT_TABLES, GAMES, Summary, simulate

__all__ = ["simulate", "Summary", "GAMES", "DEFAULT_TABLES", "DEFAULT_START", "DEFAULT_HOURS",
           "FAULT_NAMES", "SPECS", "build_rates", "parse_rate"]
