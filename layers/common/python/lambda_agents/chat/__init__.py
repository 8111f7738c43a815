"""The chat-message API (spec 001 sections 1-6 and A-G): PromptBuilder, HistoryAssembler,
AIConversationService, LLMOutputParser with its error classes, TemplateDraftMapper, fallback D,
the audit hash E, the mock / openai switch F and the Japanese language policy G.

Nothing here imports openai: the model is a ``ChatModel`` port built by ``llm.factory``."""
