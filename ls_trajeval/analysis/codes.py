"""The one label encoder of the analysis: labels to small integer codes in order of first appearance, so a
column of a million repeated labels is an int array and a rater matrix fits in int16."""
from __future__ import annotations

from collections.abc import Hashable


class Codes:
    def __init__(self) -> None:
        self.index: dict = {}
        self.values: list = []

    def code(self, value: Hashable | None) -> int:
        """The value's code (a new one for a new value); -1 for None (no label)."""
        if value is None:
            return -1
        c = self.index.get(value)
        if c is None:
            c = self.index[value] = len(self.values)
            self.values.append(value)
        return c
