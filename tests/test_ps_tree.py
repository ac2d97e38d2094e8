"""``ps`` draws each branch's last row with └─ and no │ past it, as tree(1) does."""

from __future__ import annotations

from supervisor.cli.ps_view import close_branches


def test_each_branchs_last_row_is_closed_and_nothing_hangs_below_it() -> None:
    drawn = [
        "t: supervisor 10",
        "│  3 teammates",
        "├─ fork server 11",
        "├─ ann 12",
        "│   └─ 20  sleep 1",
        "│   └─ 21  sleep 2",
        "│   ├─ sub (subagent of ann)",
        "├─ ben 13",
        "│   ├─ sub2 (subagent of ben)",
        "│   │   └─ 22  sleep 3",
        "  failed task #1 x",
    ]
    assert close_branches(drawn) == [
        "t: supervisor 10",
        "│  3 teammates",
        "├─ fork server 11",
        "├─ ann 12",
        "│   ├─ 20  sleep 1",
        "│   ├─ 21  sleep 2",
        "│   └─ sub (subagent of ann)",
        "└─ ben 13",
        "    └─ sub2 (subagent of ben)",
        "        └─ 22  sleep 3",
        "  failed task #1 x",
    ]
