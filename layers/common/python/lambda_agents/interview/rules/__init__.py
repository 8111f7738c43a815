"""The interview's domain rules: the stored types, the one reducer that applies an agent's state
changes (where the invariants live), which field comes next, the plan's check, what a sub-session
is handed, what must never be asked, the audit record around every tool call, and the events
a hiring team subscribes to."""
