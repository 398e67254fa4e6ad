"""The shared reader of converters' records (converters/support/files.py ``records``): each record's origin."""
from __future__ import annotations

from ls_trajeval.converters.support.files import list_items, records


def _seen(pairs):
    # what each origin says when its record is taken: a moving origin is read before the next record, as a gather does
    return [(o.fmt, o.source, o.line, o.index, o.ordinal, o.where, rec) for o, rec in pairs]


def test_a_moving_origin_says_what_an_origin_per_line_says(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"a": 1}\n\n{"b": 2}\nnot json\n[{"c": 3}]\n')  # a blank line: line numbers and ordinals part
    each = _seen(records(log, "x", None))
    assert [(line, ordinal) for _, _, line, _, ordinal, _, _ in each] == [(1, 0), (3, 1), (4, 2), (5, 3)]
    assert _seen(records(log, "x", None, moving=True)) == each
    moved = [o for o, _ in records(log, "x", None, moving=True)]
    assert all(o is moved[0] for o in moved)  # one Origin for the file's lines


def test_a_split_asked_for_lines_gets_an_origin_per_line(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('[{"a": 1}, {"b": 2}]\n{"c": 3}\n')

    def split(value, origin):  # asked for lines too: the records it makes keep their origins
        return list_items(value, origin)

    got = list(records(log, "x", split, moving=True))
    assert [(o.line, o.index, rec) for o, rec in got] == [(1, 0, {"a": 1}), (1, 1, {"b": 2}), (2, None, {"c": 3})]
    assert len({id(o) for o, _ in got}) == 3


def test_a_document_is_split_with_origins_of_its_own(tmp_path):
    doc = tmp_path / "doc.json"
    doc.write_text('[{"a": 1},\n {"b": 2}]')
    got = list(records(doc, "x", moving=True))
    assert [(o.line, o.index, o.where, rec) for o, rec in got] == [(None, 0, "[0]", {"a": 1}),
                                                                   (None, 1, "[1]", {"b": 2})]
    assert got[0][0] is not got[1][0]
