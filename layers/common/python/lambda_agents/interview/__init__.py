"""The job-application interview run by cooperating agents (spec 003, conventions 002).

Layout, from the outside in:
- ``service``: what the API layer calls (create / post a message / read), persisting the
  orchestrator's ``StateChange`` list through a repository port with optimistic locking.
- ``orchestrator``: builds each agent's context, runs Greeter -> Architect -> Interviewer,
  collects the state changes of one applicant turn.
- ``agent_loop``: BaseAgent.run_agent_loop (until ``ask``; tool results and errors back to the
  model; an iteration budget per turn; remaining-task injection).
- ``agents/``: Greeter, Architect, Interviewer (tools and prompts); ``subagents``: Reviewer,
  QuickCheck, Auditor as sub-sessions with the spec's output schemas.
- ``state_changes``: the StateChange types and the one reducer that applies them, where the
  invariants (field state machine, completion only after a passed audit) live in code.
"""
