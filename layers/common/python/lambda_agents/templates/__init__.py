"""Process templates (docs/chat-and-templates.md#process-templates): the CreateProcessTemplateDto, its
validation (contiguous seq, no duplicates, no forward references, seq 1 based on the goal, a cycle
check), seq -> id resolution, and the tolerant name search. Imports no LLM code: ProcessTemplatesFunction stays
free of openai at cold start."""
