"""What every simulated table shares: clock, seats, dealers, devices, event helpers.

A table is a small state machine driven by the floor: each :meth:`step`
appends the events of one round (with whatever happens around it: a new
pack, a dealer change, players coming and going) to ``self.out``, every one
stamped with the table's own clock, which only moves forward.

Game modules subclass :class:`TableSim` and implement ``play_round`` (and
``finish`` for what must happen before ``table_closed``).
"""
from __future__ import annotations

import dataclasses
import random

from pitwatch.simulator.clock import HOUR, MINUTE, SECOND, GamingDays
from pitwatch.simulator.devices import Port
from pitwatch.simulator.faults import ALL, TableFaults, TruthLog, injects
from pitwatch.simulator.reuse import TableIds


@dataclasses.dataclass
class TableConfig:
    table_id: str          # BAC-01
    code: str              # BAC01
    open_ms: int
    close_ms: int
    seed: str
    dealers: list[str]
    terminal: Port
    shoe: Port | None
    shuffler: Port | None          # the table's own shuffler (or deck machine)
    backroom: Port | None = None   # shared back-room shuffler (pre-shuffled packs)
    rates: dict | None = None
    truth: TruthLog | None = None
    rogue: Port | None = None      # UNKNOWN_DEVICE: a shuffler not in the registry (only when that fault is on)
    reuse_ids: bool = False        # --reuse-ids: packs numbered per gaming day and wrapped, rounds per pack
    gaming_days: GamingDays | None = None


class TableSim:
    game = ""
    decks = 1
    max_seat = 7
    min_players = 1
    max_players = 7
    rounds_per_hour = 50.0
    speed = 1.0  # scales every delay, to reach the game's rounds per hour

    def __init__(self, cfg: TableConfig):
        self.cfg = cfg
        self.table_id = cfg.table_id
        self.code = cfg.code
        self.rng = random.Random(cfg.seed)
        self._random = self.rng.random
        self.faults = TableFaults(self, cfg.rates or {}, cfg.seed + ":faults", cfg.truth)
        self.t = cfg.open_ms
        self.close_ms = cfg.close_ms
        self.out: list = []
        self.dt = cfg.terminal
        self.shoe_port = cfg.shoe
        self.shoe_quiet = False   # SHOE_SILENT: the shoe is unplugged for the current pack
        self.rogue_used = False   # UNKNOWN_DEVICE: the rogue shuffler reported a pack already
        self.seated: list[int] = []
        self.first_seated: int | None = None
        self.staying: int | None = None   # a seat whose player never leaves (HOLD_SKEW's confederate)
        self.opened = False
        self.ids = TableIds(cfg.table_id, cfg.code, cfg.reuse_ids, cfg.gaming_days)
        self.dealer_i = 0
        self.dealer_id = cfg.dealers[0]
        self.dpre = f'"dealer_id":"{self.dealer_id}"'
        self.next_rotation = self.t + self._rotation_gap()
        self.rounds = 0

    # ------------------------------------------------------------- time, events
    def wait(self, lo: int, hi: int) -> None:
        self.t += 1 + int((lo + (hi - lo) * self.rng.random()) * self.speed)

    def dealer(self, typ: str, body: str = "", lo: int = 1200, hi: int = 3500) -> None:
        """A dealer-terminal event; ``body`` starts with a comma (or is empty)."""
        t = self.t = self.t + 1 + int((lo + (hi - lo) * self._random()) * self.speed)
        dt = self.dt
        self.out.append((t, dt, dt.heads.get(typ) or dt.typed(typ), self.dpre + body))

    def device(self, port: Port, typ: str, body: str, lo: int = 300, hi: int = 900) -> None:
        t = self.t = self.t + 1 + int((lo + (hi - lo) * self._random()) * self.speed)
        if self.shoe_quiet and port is self.shoe_port:
            return   # unplugged (SHOE_SILENT): time passes as if it wrote, nothing is written
        self.out.append((t, port, port.heads.get(typ) or port.typed(typ), body))

    # ------------------------------------------------------------- the loop
    def step(self) -> bool:
        if not self.opened:
            self.open()
            return True
        if self.t >= self.close_ms:
            self.finish()
            self.dealer("table_closed", "", 20 * SECOND, 90 * SECOND)
            return False
        t0 = self.t
        self.faults.begin_round()
        self.play_round()
        self.rounds += 1
        target = HOUR / (self.rounds_per_hour * 1.15) * (0.8 + 0.4 * self.rng.random())
        self.t += max(4 * SECOND, int(target - (self.t - t0)))
        self.between_rounds()
        return True

    def open(self) -> None:
        self.opened = True
        self.dealer("table_opened", f',"game":"{self.game}","decks":{self.decks}', 0, 2000)
        self.dealer("dealer_in", "", 400, 1500)
        n = self.min_players + int(self.rng.random() * (self.max_players - self.min_players + 1))
        for _ in range(max(n, self.min_players)):
            self.seat_player(10 * SECOND, 80 * SECOND)
        self.t += 30 * SECOND + int(60 * SECOND * self.rng.random())

    def seat_player(self, lo: int = 5 * SECOND, hi: int = 40 * SECOND) -> int | None:
        free = [s for s in range(1, self.max_seat + 1) if s not in self.seated]
        if not free:
            return None
        seat = free[int(self.rng.random() * len(free))]
        self.seated.append(seat)
        self.seated.sort()
        if self.first_seated is None:
            self.first_seated = seat
        self.dealer("player_seated", f',"seat":{seat}', lo, hi)
        self.on_seated(seat)
        return seat

    def unseat_player(self, seat: int) -> None:
        self.seated.remove(seat)
        self.dealer("player_left", f',"seat":{seat}', 2 * SECOND, 20 * SECOND)
        self.on_left(seat)

    def on_seated(self, seat: int) -> None:
        pass

    def on_left(self, seat: int) -> None:
        pass

    def between_rounds(self) -> None:
        rng = self.rng
        if self.t >= self.next_rotation:
            dealers = self.cfg.dealers
            self.dealer_i = (self.dealer_i + 1) % len(dealers)
            self.dealer_id = dealers[self.dealer_i]
            self.dpre = f'"dealer_id":"{self.dealer_id}"'
            self.dealer("dealer_in", "", 20 * SECOND, 90 * SECOND)
            self.next_rotation = self.t + self._rotation_gap()
        if len(self.seated) > self.min_players and rng.random() < self.leave_rate():
            seat = self.seated[int(rng.random() * len(self.seated))]
            if seat != self.staying:
                self.unseat_player(seat)
        if len(self.seated) < self.max_players and rng.random() < self.join_rate():
            self.seat_player()

    def leave_rate(self) -> float:
        return 0.05

    def join_rate(self) -> float:
        return 0.06 if len(self.seated) >= 3 else 0.3

    def _rotation_gap(self) -> int:
        return 20 * MINUTE + int(40 * MINUTE * self.rng.random())

    # ------------------------------------------------------------- per game
    def play_round(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass

    @property
    def pack_no(self) -> int:
        """Packs the table has taken (whatever ids they were given)."""
        return self.ids.pack_no

    def start_round_ids(self, width: int, prefix: str = "") -> str:
        """The id of a new round; with ``reuse_ids`` numbered within the current pack, so a game
        takes it after the round's pack (:mod:`pitwatch.simulator.reuse`)."""
        return self.ids.round(width, prefix)

    def new_pack_id(self, width: int) -> str:
        return self.ids.pack(width, self.t)

    def gap_ports(self) -> list[Port]:
        """Devices of this table alone (a shared shuffler's gap has no single table) that have
        written before (a jump before a device's first line would be invisible)."""
        return [p for p in (self.dt, self.shoe_port if self.rounds else None) if p is not None]

    def maybe_seq_gap(self) -> None:
        if self.faults:
            self.faults.inject(["SEQ_GAP"])


@injects("SEQ_GAP", *ALL)
def _seq_gap(table: TableSim) -> bool:
    """The next 1-3 events of one of the table's devices are lost upstream."""
    ports = table.gap_ports()
    port = ports[int(table.faults.rng.random() * len(ports))]
    lost = 1 + int(table.faults.rng.random() * 3)
    table.out.append((table.t, port, None, lost))
    table.faults.fire("SEQ_GAP", f"lost_{lost}", [("SEQ_GAP", {"device_id": port.dev.device_id})])
    return True
