"""Tables that fit the terminal they are printed on, without ever cutting a number.

rich shrinks a table wider than its console by cutting cells ("0.…"), which turns a measurement into
nothing. Here every column says how much it matters (`keep`: 1 is kept longest); when the columns' full
widths do not fit, the least important are left out whole, and the caption names them. A number is
never wrapped or cut: a numeric column is as wide as its widest cell. Text columns (`wrap`) may fold
at spaces, so they count only their longest word. Headers fold at spaces too ("busbw" over "GB/s").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.table import Table
from rich.text import Text

SEPARATOR = 3  # " │ " between two columns (no outer edge, no outer padding)


@dataclass
class Column:
    header: str
    keep: int  # 1 = kept longest; the largest is left out first when the table does not fit
    justify: str = "right"
    wrap: bool = False  # text that may fold at spaces; numbers never do
    cells: list[str] = field(default_factory=list)  # rich markup


def _length(markup: str) -> int:
    return Text.from_markup(markup).cell_len


def _longest_word(markup: str) -> int:
    return max((_length(word) for word in markup.split()), default=0)


def needed(column: Column, fold_header: bool = True) -> int:
    """The width a column needs so that none of its numbers is cut (its header folded at spaces, or
    whole)."""
    header = _longest_word(column.header) if fold_header else _length(column.header)
    if column.wrap:
        return max([header, *(_longest_word(c) for c in column.cells)])
    lines = [line for cell in column.cells for line in cell.split("\n")]
    return max([header, *(_length(line) for line in lines)])


def _total(columns: list[Column], fold_headers: bool) -> int:
    return sum(needed(c, fold_headers) for c in columns) + SEPARATOR * max(len(columns) - 1, 0)


def choose(columns: list[Column], width: int | None) -> tuple[list[Column], list[Column], bool]:
    """(the columns shown, in their order; the columns left out; whether headers fold) for a console
    `width` wide: whole headers where they fit, folded headers next, then columns left out."""
    shown = list(columns)
    if width is None or _total(shown, fold_headers=False) <= width:
        return shown, [], False
    while _total(shown, fold_headers=True) > width and len(shown) > 1:
        shown.remove(max(shown, key=lambda c: (c.keep, columns.index(c))))
    return shown, [c for c in columns if c not in shown], True


def fitted_table(columns: list[Column], width: int | None, **options: Any) -> tuple[Table, list[str]]:
    """A rich Table of the columns that fit `width` (every column when None), and the headers of those
    left out, for the caption."""
    shown, left_out, fold = choose(columns, width)
    table = Table(show_edge=False, pad_edge=False, **options)
    for column in shown:
        folded = fold and not column.wrap and _length(column.header) > needed(column)  # rich folds text columns
        table.add_column(
            "\n".join(column.header.split()) if folded else column.header,
            justify=column.justify,
            min_width=needed(column, fold),
            no_wrap=not column.wrap,
            overflow="fold" if column.wrap else "ellipsis",
        )
    rows = max((len(c.cells) for c in columns), default=0)
    for i in range(rows):
        table.add_row(*(c.cells[i] if i < len(c.cells) else "" for c in shown))
    return table, [c.header for c in left_out]


def left_out_line(headers: list[str], width: int | None) -> str:
    """The caption line naming the columns a narrow terminal left out."""
    if not headers:
        return ""
    return (
        f"not shown at {width} columns: {', '.join(headers)} (a wider terminal shows them; "
        "`--format csv` has every column)"
    )
