"""The chat-message API (docs/chat-and-templates.md): PromptBuilder, HistoryAssembler, AIConversationService,
LLMOutputParser with its error classes, TemplateDraftMapper, the fallback answer, the audit hash,
the mock / openai switch and the Japanese language policy.

Nothing here imports openai: the model is a ``ChatModel`` port built by ``llm.factory``."""
