"""The punto banco tableau, checked by exact enumeration of 8-deck card orders.

Every order of the first six cards of an 8-deck shoe is weighed by how many
card orders share its baccarat values; the engine's own coup logic
(:func:`pitwatch.rules.cards.coup`, the same functions DRAWING_RULE uses) decides each.
Only a right tableau reproduces the known totals (docs/design-notes.md).
"""
from __future__ import annotations

from pitwatch.rules.cards import BACCARAT_VALUE_CARDS, baccarat_total, coup

TOTAL = 4_998_398_275_503_360
BANKER, PLAYER, TIE = 2_292_252_566_437_888, 2_230_518_282_592_256, 475_627_426_473_216


def test_tableau_exact_enumeration_over_eight_decks():
    counts = [128] + [32] * 9  # value 0 (T J Q K) and 1-9, 8 decks
    wins = {"banker": 0, "player": 0, "tie": 0}
    total = 0
    order = [0] * 6
    rep = BACCARAT_VALUE_CARDS

    def walk(depth: int, weight: int) -> None:
        nonlocal total
        if depth == 4:
            # the coup reads at most two more cards; weigh both remaining places
            outcome_weights: dict[str, int] = {}
            for v5 in range(10):
                w5 = weight * counts[v5]
                if not w5:
                    continue
                counts[v5] -= 1
                for v6 in range(10):
                    w6 = w5 * counts[v6]
                    if not w6:
                        continue
                    order[4], order[5] = v5, v6
                    player, banker = coup([rep[v] for v in order])
                    pt, bt = baccarat_total(player), baccarat_total(banker)
                    k = "player" if pt > bt else "banker" if bt > pt else "tie"
                    outcome_weights[k] = outcome_weights.get(k, 0) + w6
                counts[v5] += 1
            for k, w in outcome_weights.items():
                wins[k] += w
                total += w
            return
        for v in range(10):
            if counts[v]:
                w = weight * counts[v]
                counts[v] -= 1
                order[depth] = v
                walk(depth + 1, w)
                counts[v] += 1

    walk(0, 1)
    assert total == TOTAL
    assert (wins["banker"], wins["player"], wins["tie"]) == (BANKER, PLAYER, TIE)
