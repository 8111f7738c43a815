"""A container's share of the provider's rate limit, spent before a request is sent.

OpenAI counts a request against two limits when it arrives: one request (RPM) and its prompt
tokens plus its ``max_tokens`` (TPM), from buckets that refill continuously. A fan-out that only
reacts to 429s sends every request, is refused, waits, and sends again: the refused requests
still take their Lambda time, a batch's users retry in lock-step, and a deep queue keeps the
account at its limit with a share of every minute wasted on refusals.

``RateBudget`` keeps the same two buckets for this container's share of the account's limits
and hands out *reservations*: a request takes its cost now and its place in line, and waits for
its turn (``wait_for_turn``), so the container's requests leave in order at the pace the share
allows and a user whose turn comes too late for the invocation is deferred at once instead of
being refused by the provider. A 429 that arrives anyway (another function, a share set too high)
holds the whole container back for its ``retry-after``, not only the call that received it.

**The account's headers.** Every answer and every 429 carries the account's state:
``x-ratelimit-limit-{requests,tokens}``, ``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*``
(the time until the bucket is full again, written as Go durations: "6m0s", "1s", "20ms"). A limit
the deployment was not told (0) is learned from the first of them (``resync``), and from then on
the container is paced as if it had been configured; the reset teaches how fast a learned limit
refills (a minute for RPM / TPM, a day for a daily limit). And each answer's remaining puts the
container's buckets where the account is: lowered when others spend it, and raised when the
account shows room its share's own refill has not yet counted, less what the container has
reserved and not yet seen counted in a header (waiting, or sent and not yet answered: ``land``).
The turns of waiting requests move with it. Answers come back out of order: a header written
before a later-sent request arrived is not followed (a fresher one was), and a request refused
with a 429 was not counted by the account, so its cost comes back (``cancel``). A configured
limit is the operator's cap: its buckets are only ever lowered by the headers, never raised.

**How many containers see the same headers.** All of them: the headers describe the account, not
the container. So a container takes ``share`` / ``containers`` of what the account shows free
(``OPENAI_RATE_LIMIT_SHARE`` and ``OPENAI_RATE_LIMIT_CONTAINERS``: for the generator its part of the
account and ``NudgeGeneratorConcurrency``; 1 and 1 for the functions that answer a person). With
fewer containers running than that, the room the idle ones leave shows up in the next headers of
the running ones, which then take it: the split never leaves the account idle, and the account's
room is never promised to more containers than may run.

Why each container takes a share and no shared limiter (a token bucket in DynamoDB): the fan-out
runs at most ``NudgeGeneratorConcurrency`` containers, and the headers let each of them see what
the others spend. A shared bucket would cost a conditional write per request on one hot item (500
plans a minute is ~8 writes/s, well within one item's 1,000 WCU/s, but every refused reservation
polls it again) and a network round trip before each call. The provider's 429 stays the backstop
for what the shares do not see (interactive routes, an account's first requests before any header).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# The limits' window. Tests that run the provider's clock faster (the fake server's time_scale)
# shorten it the same way; a learned limit's window comes from its reset header instead.
MINUTE_S = 60.0
_KINDS = ("requests", "tokens")
# A learned limit's window is read from a header only when the bucket is at least this much below
# full: the remaining count is a whole number, and a small gap would make the window's error large.
_WINDOW_READ_BELOW = 0.25
_MAX_WINDOW_S = 86_400.0
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class RateShare:
    """Per-minute limits this container may spend: the account's limits x ``share`` / ``containers``."""

    requests_per_minute: float
    tokens_per_minute: float

    @classmethod
    def of_account(
        cls, requests_per_minute: int, tokens_per_minute: int, *, share: float = 1.0, containers: int = 1
    ) -> RateShare | None:
        """The share, or None when neither limit is known (0)."""
        if requests_per_minute <= 0 and tokens_per_minute <= 0:
            return None
        part = share / max(1, containers)
        return cls(
            requests_per_minute * part if requests_per_minute > 0 else float("inf"),
            tokens_per_minute * part if tokens_per_minute > 0 else float("inf"),
        )

    def requests_a_minute(self, cost_tokens: int) -> float:
        """How many requests of ``cost_tokens`` (prompt + max_tokens) a minute the share allows."""
        return min(self.requests_per_minute, self.tokens_per_minute / max(1, cost_tokens))


UNKNOWN = RateShare(float("inf"), float("inf"))


@dataclass
class Reservation:
    """A request's place: ``wait_s`` was its wait when it was taken (``RateBudget.wait_for_turn``
    waits for it as the account moves); ``cancel`` gives its cost back (not sent). Until
    ``RateBudget.land`` (its answer or its failure) it is *open*: waiting, or sent and maybe not
    yet counted in the headers the container reads."""

    tokens: int
    wait_s: float
    budget: RateBudget
    places: tuple[float, float] = field(default=(0.0, 0.0), repr=False)  # in the requests' and tokens' lines
    open: bool = field(default=True, repr=False)
    sent_at: float | None = field(default=None, repr=False)  # when its turn came

    def cancel(self) -> None:
        self.budget.cancel(self)


class RateBudget:
    """Two continuously refilled buckets (requests, tokens), each holding at most one minute of
    its share, that may go into debt: a reservation made while they are short takes its cost all
    the same and waits until the refill (or the account's headers) has paid it, so reservations
    are served in order. A kind whose limit is not known (``share`` None, or infinite) makes
    nobody wait until a header tells it (``resync``).

    ``part`` and ``containers`` say how much of what the account's headers show is this
    container's: its function's part of the account, split between the function's containers.

    ``clock`` and ``wait_on`` are the budget's time: ``wait_on(condition, seconds)`` is how a
    request waits for its turn (the condition's own ``wait``, woken early when the line moves). A
    test passes a clock that jumps to the turn instead of waiting for it, so what it asserts is
    the order and the turns the budget decides, not how fast its machine is."""

    def __init__(
        self,
        share: RateShare | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        part: float = 1.0,
        containers: int = 1,
        wait_on: Callable[[threading.Condition, float], object] = threading.Condition.wait,
    ) -> None:
        share = share or UNKNOWN
        self._clock = clock
        self._wait_on = wait_on
        self._part = part / max(1, containers)
        self._turns = threading.Condition(threading.Lock())
        self._requests = _Bucket(share.requests_per_minute, MINUTE_S)
        self._tokens = _Bucket(share.tokens_per_minute, MINUTE_S)
        self._at = clock()
        self._followed_sent_at = -math.inf  # the latest-sent request whose headers the buckets followed

    @classmethod
    def for_account(
        cls,
        requests_per_minute: int,
        tokens_per_minute: int,
        *,
        share: float = 1.0,
        containers: int = 1,
        clock: Callable[[], float] = time.monotonic,
        wait_on: Callable[[threading.Condition, float], object] = threading.Condition.wait,
    ) -> RateBudget:
        """This container's budget (``RateShare.of_account``); a limit not known (0) is learned
        from the account's headers."""
        split = RateShare.of_account(requests_per_minute, tokens_per_minute, share=share, containers=containers)
        return cls(split, clock, part=share, containers=containers, wait_on=wait_on)

    @property
    def share(self) -> RateShare:
        """The per-minute limits this container paces to now (infinite: not known yet)."""
        with self._turns:
            return RateShare(self._requests.per_minute(), self._tokens.per_minute())

    def reserve(self, tokens: int) -> Reservation:
        """Take one request and ``tokens`` (capped at a minute's share: the provider refuses a
        request above its whole limit whatever the wait) and say how long to wait for them."""
        with self._turns:
            self._refill()
            cost = int(min(float(tokens), self._tokens.capacity))
            self._requests.open += 1.0
            self._tokens.open += cost
            request_place, request_wait = self._requests.take(1.0)
            token_place, token_wait = self._tokens.take(float(cost))
            return Reservation(cost, max(request_wait, token_wait), self, (request_place, token_place))

    def wait_for_turn(self, reservation: Reservation, may_wait_s: float) -> float | None:
        """Block until ``reservation``'s turn (None), or return the wait still ahead as soon as it
        is longer than what is left of ``may_wait_s``: a header or a 429 that comes meanwhile moves
        the turn, earlier or later."""
        give_up_at = self._clock() + may_wait_s
        with self._turns:
            while True:
                self._refill()
                wait = max(self._requests.wait_for(reservation.places[0]), self._tokens.wait_for(reservation.places[1]))
                if wait <= 0:
                    reservation.sent_at = self._clock()
                    return None
                if wait > give_up_at - self._clock():
                    return wait
                self._wait_on(self._turns, wait)

    def cancel(self, reservation: Reservation) -> None:
        """``reservation`` is not sent, or was refused (a 429: the account did not count it): its
        cost goes back. Still waiting, it leaves the line and only the turns after it move up;
        its turn had come, the bucket gets its cost back."""
        with self._turns:
            if not reservation.open:
                return
            self._land(reservation)
            self._refill()
            self._requests.give_back(reservation.places[0], 1.0)
            self._tokens.give_back(reservation.places[1], float(reservation.tokens))
            self._turns.notify_all()

    def hold(self, seconds: float) -> None:
        """Nothing more leaves for ``seconds`` (a 429's retry-after): both buckets are emptied to
        what refills by then, so every request of the container waits, not only the refused one."""
        with self._turns:
            self._refill()
            self._requests.empty_for(seconds)
            self._tokens.empty_for(seconds)
            self._turns.notify_all()

    def land(self, reservation: Reservation) -> None:
        """``reservation``'s request has its answer (or failed): the headers read from now on count it."""
        with self._turns:
            self._land(reservation)

    def _land(self, reservation: Reservation) -> bool:
        if not reservation.open:
            return False
        reservation.open = False
        self._requests.open -= 1.0
        self._tokens.open -= reservation.tokens
        return True

    def resync(self, headers: Mapping[str, str], answered: Reservation | None = None) -> None:
        """Learn and follow the account from the ``x-ratelimit-*`` headers (names without the
        prefix; see the module docstring) of ``answered``'s answer, which they count (None: headers
        written now, a 429's). Unreadable or missing ones are ignored: a server that sends none
        leaves the budget as it was."""
        with self._turns:
            self._refill()
            sent_at = None if answered is None else answered.sent_at
            fresh = sent_at is None or sent_at >= self._followed_sent_at
            if answered is not None and self._land(answered) and not fresh:
                # The fresher header followed already counted it, and it was still subtracted as open.
                self._requests.recount(1.0)
                self._tokens.recount(float(answered.tokens))
            if sent_at is not None and fresh:
                self._followed_sent_at = sent_at
            for kind, bucket in zip(_KINDS, (self._requests, self._tokens), strict=True):
                limit = _number(headers.get(f"limit-{kind}"))
                remaining = _number(headers.get(f"remaining-{kind}"))
                if limit is None or remaining is None or limit <= 0:
                    continue
                remaining = min(remaining, limit)
                unknown = bucket.capacity == math.inf
                if bucket.learned or unknown:
                    bucket.learn(limit * self._part, _window_s(limit, remaining, headers.get(f"reset-{kind}")))
                if fresh or unknown:
                    bucket.follow(remaining / limit * bucket.capacity)
            self._turns.notify_all()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._at)
        self._at = now
        self._requests.refill(elapsed)
        self._tokens.refill(elapsed)


class _Bucket:
    """A bucket kept as two running totals: ``taken`` (every reservation's cost, in order) and
    ``paid`` (what the refill and the account have made available). Its level is paid - taken; a
    reservation's place is ``taken`` just after it, and its turn comes when ``paid`` reaches it. A
    reservation cancelled while it waits leaves a *hole* in the line: the turns after it come its
    cost earlier, those before it do not move, and once ``paid`` reaches it the hole is passed."""

    def __init__(self, per_minute: float, minute_s: float) -> None:
        self.capacity = per_minute
        self.per_s = per_minute / minute_s
        self.open = 0.0  # reserved, not yet seen counted in a header (waiting, or sent and not answered)
        self.taken = 0.0
        self.paid = per_minute if per_minute != math.inf else 0.0
        self.learned = False
        self._holes: list[tuple[float, float]] = []  # (place, cost) of cancelled reservations still ahead

    def _end(self) -> float:
        """Where the line ends: everything taken, less the holes still ahead."""
        self._pass_holes()
        return self.taken - sum(cost for _, cost in self._holes)

    def _pass_holes(self) -> None:
        while self._holes and self.paid >= self._holes[0][0] - self._holes[0][1]:
            self.paid += self._holes.pop(0)[1]

    def per_minute(self) -> float:
        """The limit as a per-minute rate (a learned one's window may be another)."""
        return self.per_s * MINUTE_S if self.learned else self.capacity

    def refill(self, elapsed_s: float) -> None:
        if self.capacity != math.inf:
            self.paid = min(self._end() + self.capacity, self.paid + elapsed_s * self.per_s)

    def take(self, amount: float) -> tuple[float, float]:
        """Take ``amount`` (into debt if need be): its place, and the seconds until the refill has paid it."""
        if self.capacity == math.inf:
            return 0.0, 0.0
        self.taken += amount
        return self.taken, self.wait_for(self.taken)

    def wait_for(self, place: float) -> float:
        if self.capacity == math.inf:
            return 0.0
        self._pass_holes()
        ahead = place - sum(cost for hole, cost in self._holes if hole < place) - self.paid
        return max(0.0, ahead / self.per_s)

    def put(self, amount: float) -> None:
        if self.capacity != math.inf:
            self.paid = min(self._end() + self.capacity, self.paid + amount)

    def give_back(self, place: float, amount: float) -> None:
        """The reservation at ``place`` is not sent: its turn had come (its cost back to the level),
        or it leaves the line (a hole)."""
        if self.capacity == math.inf:
            return
        if self.wait_for(place) <= 0:
            self.put(amount)
        else:
            self._holes.append((place, amount))
            self._holes.sort()

    def follow(self, available: float) -> None:
        """The account shows ``available`` for this container. A learned limit's level is that, less
        what the container has reserved that the account's figure does not count yet (``open``); a
        configured one is only lowered to it."""
        if self.capacity == math.inf:
            return
        if self.learned:
            self.paid = self._end() + min(self.capacity, available) - max(0.0, self.open)
        else:
            self.paid = min(self.paid, self._end() + available)

    def recount(self, amount: float) -> None:
        """``amount`` was subtracted twice (counted by the account and still open): a learned level gets it back."""
        if self.learned:
            self.put(amount)

    def learn(self, capacity: float, window_s: float | None) -> None:
        """A limit the account's headers tell: ``capacity`` a window (a minute unless the header's
        reset says otherwise)."""
        if self.capacity == math.inf:
            self.taken = self.paid = 0.0
            self._holes.clear()
        self.learned = True
        window = window_s or (self.capacity / self.per_s if self.capacity not in (0.0, math.inf) else MINUTE_S)
        self.capacity = capacity
        self.per_s = capacity / window

    def empty_for(self, seconds: float) -> None:
        if self.capacity != math.inf:
            self.paid = min(self.paid, self._end() - seconds * self.per_s)


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def _window_s(limit: float, remaining: float, reset: str | None) -> float | None:
    """How long the account takes to refill its whole limit, read from the reset (the time until
    the bucket is full again), or None when the header cannot say it precisely enough."""
    reset_s = parse_duration(reset)
    missing = limit - remaining
    if reset_s is None or reset_s <= 0 or missing < max(1.0, _WINDOW_READ_BELOW * limit):
        return None
    return min(_MAX_WINDOW_S, reset_s * limit / missing)


def parse_duration(text: str | None) -> float | None:
    """Seconds in a Go duration as OpenAI's reset headers write it ("6m0s", "1s", "20ms", "1h2m3.5s");
    None when it is not one."""
    if not text:
        return None
    text = text.strip()
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * _GO_UNITS[unit] for number, unit in parts)
