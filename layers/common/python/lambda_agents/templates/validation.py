"""The step-plan rules (docs/chat-and-templates.md#step-plan-rules), in one place for both the API's DTO and the
model's draft.

Rules, checked in this order (the first failing group decides the error class; every problem of
that group is listed):

1. count: at least one step, at most ``MAX_STEPS`` (``TooManySteps``). The cap keeps the template
   and all its steps inside ONE DynamoDB transaction (100 items): a template is never half written.
2. numbering: seq is exactly 1..N, where N is the number of steps: no duplicate (``SeqDuplicate``)
   and no gap or number outside 1..N (``SeqGap``). Dependencies are not checked on a broken
   numbering: what a seq refers to is ambiguous there.
3. the step with seq 1 is based on the goal (``InvalidBasis``).
4. dependencies: every ``dependsOn`` names an existing seq (``UnknownDependency``); no cycle, a
   step depending on itself included (``DependencyCycle``, reported with its path, before the
   forward references it implies); only earlier seq (``ForwardReference``).

Gaps and cycles could have been warnings; they are errors here (400,
docs/chat-and-templates.md#decisions-on-open-points), so a stored template is always a DAG users can
schedule. A repeated seq inside one ``dependsOn`` says the same thing twice: it is dropped silently
(``unique_dependencies``), not rejected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..errors import DomainError

MAX_STEPS = 50
TRANSACTION_ITEM_LIMIT = 100
OFFSET_DAYS_LIMIT = 365
assert MAX_STEPS + 1 <= TRANSACTION_ITEM_LIMIT, "the template item and every step must fit in one transaction"

NodeT = TypeVar("NodeT", bound=Hashable)


class StepLike(Protocol):
    """What the rules read from a step: the DTO's and the draft's steps both fit."""

    @property
    def seq(self) -> int: ...

    @property
    def basis(self) -> str: ...

    @property
    def dependency_seqs(self) -> list[int]: ...


@dataclass(frozen=True)
class Problem:
    error_class: str
    message: str
    seq: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {"errorClass": self.error_class, "message": self.message, "seq": self.seq}


class TemplateInvalid(DomainError, ValueError):
    """The step plan breaks a step-plan rule; ``error_class`` names the first failing rule, and
    the answer lists every problem of that rule. A ValueError too: pydantic validators raise it."""

    code = "TEMPLATE_INVALID"

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("TemplateInvalid needs at least one problem")
        self.problems = list(problems)
        self.error_class = problems[0].error_class
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(
            f"{self.error_class}: {problems[0].message}{more}",
            details={"errorClass": self.error_class, "problems": [problem.as_dict() for problem in self.problems]},
        )


def unique_dependencies(seqs: Sequence[int]) -> list[int]:
    """dependsOn without repeats, first occurrence kept."""
    return list(dict.fromkeys(seqs))


def check_step_plan(steps: Sequence[StepLike]) -> list[Problem]:
    """Every problem of the first failing rule group; empty when the plan is valid."""
    if not steps:
        return [Problem("NoSteps", "stepTemplates needs at least one step")]
    if len(steps) > MAX_STEPS:
        return [Problem("TooManySteps", f"{len(steps)} steps; a template holds at most {MAX_STEPS}")]
    numbering = _numbering_problems([step.seq for step in steps])
    if numbering:
        return numbering
    by_seq = {step.seq: step for step in steps}
    if by_seq[1].basis != "goal":
        return [Problem("InvalidBasis", f"the step with seq 1 must have basis 'goal', not {by_seq[1].basis!r}", 1)]
    return _dependency_problems(by_seq)


def validate_step_plan(steps: Sequence[StepLike]) -> None:
    problems = check_step_plan(steps)
    if problems:
        raise TemplateInvalid(problems)


def _numbering_problems(seqs: list[int]) -> list[Problem]:
    count = len(seqs)
    problems = [
        Problem("SeqDuplicate", f"seq {seq} is used {times} times", seq)
        for seq, times in sorted(Counter(seqs).items())
        if times > 1
    ]
    if problems:
        return problems
    outside = sorted(seq for seq in seqs if not 1 <= seq <= count)
    missing = sorted(set(range(1, count + 1)) - set(seqs))
    if outside or missing:
        detail = f"missing {_ranges(missing)}" if missing else ""
        if outside:
            detail += ("; " if detail else "") + f"outside 1..{count}: {', '.join(map(str, outside[:10]))}"
        return [Problem("SeqGap", f"seq must run 1..{count} without gaps ({detail})", missing[0] if missing else None)]
    return []


def _dependency_problems(by_seq: Mapping[int, StepLike]) -> list[Problem]:
    unknown: list[Problem] = []
    forward: list[Problem] = []
    graph: dict[int, list[int]] = {}
    for seq in sorted(by_seq):
        targets = unique_dependencies(by_seq[seq].dependency_seqs)
        graph[seq] = [target for target in targets if target in by_seq]
        for target in targets:
            if target not in by_seq:
                message = f"seq {seq} depends on seq {target}, which does not exist"
                unknown.append(Problem("UnknownDependency", message, seq))
            elif target > seq:
                forward.append(
                    Problem("ForwardReference", f"seq {seq} depends on later seq {target}; only earlier steps", seq)
                )
    if unknown:
        return unknown
    cycle = find_cycle(graph)
    if cycle is not None:
        path = " -> ".join(map(str, cycle))
        return [Problem("DependencyCycle", f"dependsOn forms a cycle: {path}", cycle[0]), *forward]
    return forward


def find_cycle(graph: Mapping[NodeT, Sequence[NodeT]]) -> list[NodeT] | None:
    """One cycle of ``graph`` as a closed path (``[a, b, a]``), or None for a DAG.

    Iterative depth-first search (no recursion limit), O(nodes + edges). Edges to nodes that
    are not keys of ``graph`` are ignored.
    """
    done: set[NodeT] = set()
    for root in graph:
        if root in done:
            continue
        on_path: dict[NodeT, int] = {root: 0}
        path: list[NodeT] = [root]
        cursors: list[int] = [0]
        while path:
            node = path[-1]
            edges = graph[node]
            if cursors[-1] < len(edges):
                target = edges[cursors[-1]]
                cursors[-1] += 1
                if target not in graph or target in done:
                    continue
                if target in on_path:
                    return [*path[on_path[target] :], target]
                on_path[target] = len(path)
                path.append(target)
                cursors.append(0)
                continue
            done.add(node)
            del on_path[node]
            path.pop()
            cursors.pop()
    return None


def _ranges(numbers: list[int]) -> str:
    """[2, 3, 4, 7] -> '2-4, 7' (at most ten runs)."""
    runs: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(runs[:10]) + (" ..." if len(runs) > 10 else "")
