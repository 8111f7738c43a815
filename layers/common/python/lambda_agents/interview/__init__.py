"""The job-application interview run by cooperating agents (docs/interview.md; the conventions every
tool-calling agent follows: docs/engine.md).

Every module, from the outside in:

- ``service``: what the applicant's API calls (start, consent, message, skip, correct, read,
  withdraw); ``turn_runner``: where a turn runs, persisting the orchestrator's ``StateChange`` list
  through ``repository`` (the port, with optimistic locking); ``pending_turns``: turns answered
  after their request; ``paid_calls``: the calls a handed-over turn's request paid for, taken by
  its worker instead of calling again; ``errors``: the
  domain's errors, each with its HTTP answer; ``requests`` / ``views`` / ``employer_views``: the
  API's request and answer models; ``interview_log``: the agents' log (docs/interview.md#logging).
- ``agents/``: ``loop`` (BaseAgent.run_agent_loop: until ``ask``; tool results and errors back
  to the model), ``turn_context`` (what a turn's agents share: an iteration budget per turn),
  ``orchestrator`` (one applicant turn: Greeter -> Architect -> Interviewer), ``greeter``,
  ``architect``, ``interviewer``, ``reviewers`` (Reviewer, QuickCheck, Auditor as sub-sessions),
  ``sub_sessions`` (a sub-session run for an agent, shown live; the QuickCheck every ``ask`` runs),
  ``tool_inputs`` (the tools' input schemas),
  ``tool_calls`` (parse_and_validate_tool_args, FunctionCallResult), ``tool_transforms`` (tool
  inputs -> stored types), ``prompts``, ``offline`` (every agent played in mock mode).
- ``rules/``: ``models`` (the stored types), ``state_changes`` (the StateChange types and the one
  reducer: the field state machine, completion only after a passed audit, nothing before
  consent), ``current_field`` (which field is next: the system decides, never the model),
  ``plan`` (the Architect's plan checked), ``handoff`` (what a sub-session is handed),
  ``compliance`` (what must never be asked), ``run_steps`` (the audit record of every tool call),
  ``application_events`` (what a hiring team is told: completed, audit failed, withdrawn).
- ``catalog/``: ``jobs`` (the employer's versioned jobs), ``notice`` (what the applicant
  consents to), ``listings`` (jobs as lists), ``applications`` (the employer's reads),
  ``my_interviews`` (an applicant's own).
- ``locales/``: ``languages``, ``residence`` (country and time zone).
"""
