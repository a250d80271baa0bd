"""``HOLD_SKEW``: a dealer working with a player, which no procedure rule can see (docs/simulator.md).

The floor's first baccarat table's first dealer (the one on duty when it opens,
``cfg.dealers[0]``) works with the player in the table's first seat taken (the
*confederate*, who then never leaves).  Whenever that dealer deals a coup, the
confederate bets the table's largest main bet on ``player``; and with probability
``p`` per such coup (``--fault HOLD_SKEW=p``) the dealer arranges the undrawn cards
so that the player hand wins (:meth:`pitwatch.simulator.baccarat.Baccarat.arrange_coup`):
the shoe reads, and the terminal records, the cards as they come, the tableau is
followed and every payout is exactly what its cards say, so the batch raises no
finding at all.  Only the hold shows it: the dealer's actual win falls short of
the theoretical win (``pitwatch query hold``).

A coup is an *opportunity* when that dealer deals it, the confederate is seated
and no other fault has taken the coup or its pack.  The ground truth
(``OUT/hold_skew.json``, :func:`pitwatch.simulator.truth.read_hold_skew`; not ``.jsonl``, so
``pitwatch run OUT`` does not read it as events) is a list of one object per skewed table: the table, the dealer, the seat, the spot, ``p``, the opportunities
and the coups arranged, ``expected_extra_win`` (``p`` × the sum over opportunities of
what the players win over their fair expectation when the player hand wins:
for each bet, its net when the player hand wins minus its amount × −edge of its
spot) and ``arranged_extra_win`` (the same sum over the arranged coups only: the
expectation given which coups were arranged).  The fair expectation is the
theory of ``seeds/hold_outcomes.csv``.  Its random stream is its own
(``SEED:TABLE:hold_skew``), so every other table and fault deals as without it.
"""
from __future__ import annotations

import functools
import random

from pitwatch.seeds import read_csv

NAME = "HOLD_SKEW"
TRUTH_FILE = "hold_skew.json"   # OUT/hold_skew.json: a list, one object per skewed table (not .jsonl: no input)
SPOT = "player"          # the side the confederate bets and the dealer makes win


@functools.cache
def _theory() -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """Baccarat's outcome probabilities and nets per unit (``seeds/hold_outcomes.csv``)."""
    rows = [r for r in read_csv("hold_outcomes.csv") if r["game"] == "baccarat"]
    probs = {r["outcome"]: float(r["probability"]) for r in rows}
    nets = {(r["outcome"], r["spot"]): float(r["net"]) for r in rows}
    return probs, nets


def extra_player_win(bets, outcome: str = SPOT) -> float:
    """What the bets ``(seat, spot, amount)`` win, all together, when ``outcome`` wins, over their fair
    expectation (each bet's amount × −edge of its spot)."""
    probs, nets = _theory()
    total = 0.0
    for _, spot, amount in bets:
        fair = amount * sum(probs[o] * nets[o, spot] for o in probs)
        total += amount * nets[outcome, spot] - fair
    return total


class HoldSkew:
    """One skewed table: who deals the arranged coups, to whom, how often; what it should cost the casino."""

    def __init__(self, table_id: str, dealer_id: str, p: float, seed: str, stake: float):
        self.table_id = table_id
        self.dealer_id = dealer_id
        self.p = p
        self.stake = stake
        self.rng = random.Random(f"{seed}:hold_skew")
        self.seat: int | None = None     # the confederate: the table's first seat taken
        self.opportunities = 0
        self.arranged = 0
        self.expected_extra = 0.0
        self.arranged_extra = 0.0

    def on_duty(self, dealer_id: str, seated: list[int]) -> bool:
        """The confederate's dealer deals and the confederate is seated."""
        return dealer_id == self.dealer_id and self.seat in seated

    def bet(self, bets: list) -> None:
        """The confederate's main bet becomes ``stake`` on ``player`` (a tie bet of his stays)."""
        bets[:] = [b for b in bets if not (b[0] == self.seat and b[1] in ("player", "banker"))]
        bets.append((self.seat, SPOT, self.stake))

    def decide(self, bets: list) -> float | None:
        """An opportunity: count what it should cost; the extra win of these bets when this coup is to be
        arranged (probability ``p``), else None."""
        extra = extra_player_win(bets)
        self.opportunities += 1
        self.expected_extra += self.p * extra
        return extra if self.rng.random() < self.p else None

    def arranged_coup(self, extra: float) -> None:
        """A coup arranged so that the player hand wins, with that extra win of its bets."""
        self.arranged += 1
        self.arranged_extra += extra

    def truth(self) -> dict:
        return {"fault": NAME, "table_id": self.table_id, "dealer_id": self.dealer_id, "seat": self.seat,
                "spot": SPOT, "p": self.p, "opportunities": self.opportunities, "arranged": self.arranged,
                "expected_extra_win": round(self.expected_extra, 2),
                "arranged_extra_win": round(self.arranged_extra, 2)}
