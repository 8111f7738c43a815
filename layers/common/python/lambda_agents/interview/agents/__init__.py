"""The six agents and what runs them: the loop every agent runs until it asks, the orchestrator of
one applicant turn, the agents that hold the conversation (Greeter, Architect, Interviewer) and
the sub-sessions that judge it (Reviewer, QuickCheck, Auditor: ``reviewers``), their tools'
input schemas, argument parsing and transforms, the prompts they share, and the offline policy
that plays every agent in mock mode. Nothing is imported here: a route that runs no turn imports
no agent."""
