"""Which local dates the generator works on: those near the user's today (a stale redelivery or a
producer's bug would otherwise pay a model call for a day that is over). Apart from ``generation``
so that the API function, which needs the window to find a deletion's records, does not import the
generator's engine."""

# The scheduler queues the user's today; SQS redelivery and a dead-letter redrive arrive later.
LOCAL_DATE_DAYS_BEFORE = 2
LOCAL_DATE_DAYS_AFTER = 1
