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
holds the whole container back for its ``retry-after``, not only the call that received it, and
then lets the first request in line go: the retry-after is when the account has room for the
refused request, so waiting a whole refill of the container's own on top of it would leave the
account idle.

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
limit's buckets follow the headers too, down always, and up only as far as the function's whole
share would have refilled them: the operator's limit stays the cap (no container ever paces
beyond the function's share), while room the function's idle containers leave does not sit
unused while this one's users wait.

**How many containers see the same headers.** All of them: the headers describe the account, not
the container. So a container takes ``share`` / ``containers`` of what the account shows free
(``OPENAI_RATE_LIMIT_SHARE`` and ``OPENAI_RATE_LIMIT_CONTAINERS``: for the generator its part of the
account and ``NudgeGeneratorConcurrency``; 1 and 1 for the functions that answer a person). With
fewer containers running than that, the room the idle ones leave shows up in the next headers of
the running ones, which then take it: the split never leaves the account idle, and the account's
room is never promised to more containers than may run.

**The pace.** Held to its split, a container whose siblings are done would trickle (20 requests
a minute shared by five: one every 19 s, while the account refills one every 3 s), and it sees
the room they left only in the headers of its own answers, which its own trickle spaces 19 s
apart (a provider that states its limit only in its 429s never shows it at all). So its pace,
its refill and the part of the account's room it takes, rises by one container's split with each
answer after which the account showed room, up to the function's whole share, and a 429 halves
it (``hold``). A learned limit counts as room another request of the same cost, or an answer
that restates nothing: the containers that run find the account's pace between them as TCP's
senders find a link's, at the price of a refusal now and then, which the account does not count
and the budget waits out. A configured limit counts only its own split of what is left, and a
header that shows less halves the pace too, so the operator's limit is not found by 429s.

Why each container takes a share and no shared limiter (a token bucket in DynamoDB): the fan-out
runs at most ``NudgeGeneratorConcurrency`` containers, and the headers let each of them see what
the others spend. A shared bucket would cost a conditional write per request on one hot item (500
plans a minute is ~8 writes/s, well within one item's 1,000 WCU/s, but every refused reservation
polls it again) and a network round trip before each call. The provider's 429 stays the backstop
for what the shares do not see (interactive routes, an account's first requests before any header).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .rate_bucket import MINUTE_S, RateBucket
from .rate_headers import header_number, parse_duration, window_s

__all__ = ["MINUTE_S", "UNKNOWN", "RateBudget", "RateShare", "Reservation", "parse_duration"]

_KINDS = ("requests", "tokens")


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
        self._requests = RateBucket(share.requests_per_minute, MINUTE_S)
        self._tokens = RateBucket(share.tokens_per_minute, MINUTE_S)
        for bucket in (self._requests, self._tokens):
            bucket.max_pace = float(max(1, containers))  # the function's whole share
        self._at = clock()
        self._held_until = -math.inf  # a 429's retry-after: no turn comes before it
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
            for bucket, amount in ((self._requests, 1.0), (self._tokens, float(cost))):
                bucket.open += amount
                bucket.waiting += amount
            request_place, request_wait = self._requests.take(1.0)
            token_place, token_wait = self._tokens.take(float(cost))
            wait = max(request_wait, token_wait, self._held_until - self._clock())
            return Reservation(cost, wait, self, (request_place, token_place))

    def wait_for_turn(self, reservation: Reservation, may_wait_s: float) -> float | None:
        """Block until ``reservation``'s turn (None), or return the wait still ahead as soon as it
        is longer than what is left of ``may_wait_s``: a header or a 429 that comes meanwhile moves
        the turn, earlier or later."""
        give_up_at = self._clock() + may_wait_s
        with self._turns:
            while True:
                self._refill()
                wait = max(
                    self._requests.wait_for(reservation.places[0]),
                    self._tokens.wait_for(reservation.places[1]),
                    self._held_until - self._clock(),
                )
                if wait <= 0:
                    if reservation.sent_at is None:
                        self._requests.waiting -= 1.0
                        self._tokens.waiting -= reservation.tokens
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
            sent = reservation.sent_at is not None
            for bucket, place, amount in (
                (self._requests, reservation.places[0], 1.0),
                (self._tokens, reservation.places[1], float(reservation.tokens)),
            ):
                bucket.waiting -= 0.0 if sent else amount
                bucket.give_back(place, amount, sent)
            self._turns.notify_all()

    def hold(self, seconds: float, tokens: int = 0) -> None:
        """Nothing more leaves for ``seconds`` (a 429's retry-after), every request of the container
        waits, not only the refused one; then the account has room for the refused request (one
        request of ``tokens``), so the first in line leaves then, not a whole refill later. A
        sped-up refill is halved: the account had less room than the pace assumed."""
        with self._turns:
            self._refill()
            self._held_until = max(self._held_until, self._clock() + seconds)
            for bucket, then in ((self._requests, 1.0), (self._tokens, float(tokens))):
                bucket.slow_down()
                bucket.empty_for(seconds, then)
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
                self._follow(kind, bucket, headers, answered, fresh)
            self._turns.notify_all()

    def _follow(
        self, kind: str, bucket: RateBucket, headers: Mapping[str, str], answered: Reservation | None, fresh: bool
    ) -> None:
        """One kind's headers: its limit learned (or its window), its level put where the account
        is, and its pace moved by what the account showed after taking ``answered`` (``_pace``)."""
        limit = header_number(headers.get(f"limit-{kind}"))
        remaining = header_number(headers.get(f"remaining-{kind}"))
        stated = limit is not None and remaining is not None and limit > 0
        if answered is not None and (fresh or not stated):
            self._pace(bucket, remaining if stated else None, 1.0 if kind == "requests" else float(answered.tokens))
        if limit is None or remaining is None or limit <= 0:
            return
        remaining = min(remaining, limit)
        unknown = bucket.capacity == math.inf
        if bucket.learned or unknown:
            bucket.learn(limit * self._part, window_s(limit, remaining, headers.get(f"reset-{kind}")))
        if fresh or unknown:
            bucket.follow(remaining / limit)

    def _pace(self, bucket: RateBucket, remaining: float | None, cost: float) -> None:
        """The account took a request of ``cost`` and has ``remaining`` left (None: it did not say).
        A learned limit speeds up while the account shows room for another such request, or says
        nothing (a provider that states its limit only in its 429s); a configured one only while
        its own split of what is left holds one, and slows back down when it does not, so the
        operator's limit is not found again by 429s."""
        if bucket.capacity == math.inf:
            return
        if remaining is None:
            if bucket.learned:
                bucket.speed_up()
        elif remaining * (1.0 if bucket.learned else self._part) >= cost:
            bucket.speed_up()
        else:
            bucket.slow_down()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._at)
        self._at = now
        self._requests.refill(elapsed)
        self._tokens.refill(elapsed)
