"""Aligned tables: columns padded to the widest cell or their minimum width, one
space apart, the last column unpadded; and the test reader gives the cells back."""

from __future__ import annotations

from shoal.cli.tables import (
    KEY_CELL_CHARS_MAX,
    MISSING,
    NAME_WIDTH_MIN,
    format_table,
    key_cell,
    time_cell,
)
from tests.support.cli import rows, tables


def test_columns_pad_to_their_minimum_width_like_kafka() -> None:
    lines = format_table(
        ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"),
        [("g", "orders", "0", "12", "3")],
        min_widths=(NAME_WIDTH_MIN, NAME_WIDTH_MIN, 10, 13),
    )
    assert lines == [
        "GROUP           TOPIC           PARTITION  START-OFFSET  LAG",
        "g               orders          0          12            3",
    ]


def test_a_long_cell_widens_its_column_and_keeps_the_rest_aligned() -> None:
    long_group = "a-share-group-with-a-long-name"
    lines = format_table(
        ("GROUP", "STATE"), [(long_group, "Stable"), ("g", "Empty")], min_widths=(15,)
    )
    assert lines[0] == "GROUP" + " " * (len(long_group) - 4) + "STATE"
    assert (lines[1].index("Stable"), lines[2].index("Empty")) == (len(long_group) + 1,) * 2
    assert lines[2] == "g" + " " * len(long_group) + "Empty"


def test_no_line_ends_in_blanks_even_with_an_empty_last_cell() -> None:
    lines = format_table(("A", "B"), [("x", "")], min_widths=(5,))
    assert lines == ["A     B", "x"]


def test_a_header_only_table() -> None:
    assert format_table(("GROUP", "STATE"), [], min_widths=(15,)) == ["GROUP           STATE"]


def test_the_reader_gives_back_every_cell() -> None:
    coordinator = "127.0.0.1:9092  (1)"
    table = format_table(
        ("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"),
        [("g1", coordinator, "Stable", "2"), ("longer-group-name-x", "h:1  (7)", "Empty", "0")],
        min_widths=(15, 25, 15),
    )
    text = "\n" + "\n".join(table) + "\n\nShare group 'x' has no offset information.\n"
    assert tables(text) == [
        [
            {"GROUP": "g1", "COORDINATOR (ID)": coordinator, "STATE": "Stable", "#MEMBERS": "2"},
            {
                "GROUP": "longer-group-name-x",
                "COORDINATOR (ID)": "h:1  (7)",
                "STATE": "Empty",
                "#MEMBERS": "0",
            },
        ]
    ]


def test_the_reader_splits_output_into_tables() -> None:
    first = format_table(("TOPIC", "STATUS"), [("t", "Successful")], min_widths=(15,))
    second = format_table(("TOPIC", "STATUS"), [("u", "Error: x y")], min_widths=(15,))
    text = "\n".join(["", *first, "", *second, ""])
    assert rows(text) == [
        {"TOPIC": "t", "STATUS": "Successful"},
        {"TOPIC": "u", "STATUS": "Error: x y"},
    ]


def test_pad_last_pads_each_last_cell_to_its_minimum_as_kafkas_printf() -> None:
    # kafka-consumer-groups --list --state: "%-25s %-20s" (the last column padded too)
    lines = format_table(
        ("GROUP", "STATE"),
        [("g", "Empty"), ("h", "a-state-longer-than-twenty")],
        min_widths=(25, 20),
        pad_last=True,
    )
    assert lines == [
        "GROUP".ljust(25) + " " + "STATE".ljust(20),
        "g".ljust(25) + " " + "Empty".ljust(20),
        "h".ljust(25) + " a-state-longer-than-twenty",
    ]


def test_end_follows_the_padded_last_column() -> None:
    # the members table's "%-15s " ends each line in one blank after #PARTITIONS
    lines = format_table(
        ("GROUP", "#PARTITIONS"), [("g", "3")], min_widths=(15, 15), pad_last=True, end=" "
    )
    assert lines == ["GROUP           #PARTITIONS     ", "g               3               "]
    assert tables("\n".join(lines)) == [[{"GROUP": "g", "#PARTITIONS": "3"}]]


def test_time_cells_are_utc_iso_with_milliseconds() -> None:
    assert time_cell(1_764_400_000_123) == "2025-11-29T07:06:40.123Z"
    assert time_cell(0) == "1970-01-01T00:00:00.000Z"
    assert time_cell(None) == MISSING


def test_key_cells_are_text_when_printable_else_hex_and_cut() -> None:
    assert key_cell(b"order-7") == "order-7"
    assert key_cell(b"caf\xc3\xa9") == "café"
    assert key_cell(b"\xff\x00") == "0xff00"
    assert key_cell(b"a\nb") == "0x610a62"
    assert key_cell(b"") == '""'
    long = key_cell(b"k" * 100)
    assert len(long) == KEY_CELL_CHARS_MAX and long.endswith("…")
