"""Sections of `make demo` (devtools/demo.py), one module per system, run in this order:
engine, nudges, chat, judge, interview. An absent module is skipped with a note.

Each module exposes ``run(ctx) -> None`` and reports through ``ctx.section(title, shows)`` (``shows``:
the one line, in words a newcomer reads, of what the section shows), ``ctx.line(text)`` and
``ctx.table(headers, rows)``, in words rather than raw JSON or Python values; see ``devtools.demo.DemoContext`` for
what else ``ctx`` gives (DynamoDB and SQS clients on an embedded moto server with the
template's tables and queues, each function's environment, ``invoke``, the fake OpenAI
server). A section runs offline in a few seconds; raising fails the demo.
"""
