"""A reader's memory of taken msg_ids: the last N, as hashes in flat arrays."""

from __future__ import annotations

import random

from ipc.seen_ids import SeenIds


def test_it_answers_as_a_dict_of_the_last_n_ids_would() -> None:
    rng = random.Random(7)
    seen, model = SeenIds(50), dict[str, None]()
    for _ in range(5_000):
        msg_id = f"id-{rng.randrange(400)}"
        assert (msg_id in seen) == (msg_id in model)
        seen.add(msg_id)
        model.setdefault(msg_id, None)  # an id taken again keeps its place, as before
        while len(model) > 50:
            del model[next(iter(model))]
        assert len(seen) == len(model)
    assert all(f"id-{n}" in seen for n in range(400) if f"id-{n}" in model)


def test_it_starts_from_ids_read_back_and_keeps_only_the_last() -> None:
    seen = SeenIds(2, ["a", "b", "c"])
    assert ("a" in seen, "b" in seen, "c" in seen, len(seen)) == (False, True, True, 2)
    assert "a" not in SeenIds(0, ["a"])
