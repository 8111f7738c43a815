"""A shared-learning record in memory (``llm.shared_learning.LearningRecord``): each write kept as
DynamoDB would give it back (through JSON: tuples become lists), and every read and write counted,
each standing for one GetItem or PutItem of the real record."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MemoryLearningRecord:
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    reads: int = 0
    writes: int = 0

    def read(self, model: str) -> dict[str, Any]:
        self.reads += 1
        stored: dict[str, Any] = json.loads(json.dumps(self.items.get(model, {})))
        return stored

    def write(self, model: str, parts: dict[str, Any]) -> None:
        self.writes += 1
        self.items[model] = json.loads(json.dumps(parts))
