"""The job-application interview run by cooperating agents (spec 003, conventions 002).

Layout, from the outside in:
- ``jobs``: the employer's versioned job catalog an interview starts from; ``applications``:
  the employer's reads of a job's applications; ``application_events``: the events a hiring
  team subscribes to, through a transactional outbox.
- ``service``: what the applicant's API calls (start, consent, message, skip, correct, read,
  withdraw), persisting the orchestrator's ``StateChange`` list through a repository port with
  optimistic locking; ``notice``: what the applicant consents to.
- ``orchestrator``: builds each agent's context, runs Greeter -> Architect -> Interviewer,
  collects the state changes of one applicant turn.
- ``agent_loop``: BaseAgent.run_agent_loop (until ``ask``; tool results and errors back to the
  model; an iteration budget per turn; remaining-task injection).
- ``agents/``: Greeter, Architect, Interviewer (tools and prompts); ``subagents``: Reviewer,
  QuickCheck, Auditor as sub-sessions with the spec's output schemas.
- ``state_changes``: the StateChange types and the one reducer that applies them, where the
  invariants (field state machine, completion only after a passed audit, nothing before
  consent, the applicant's skip and correction) live in code.
"""
