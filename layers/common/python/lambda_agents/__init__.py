"""Shared layer of the Lambda Agents bundle: configuration, observability, the structured-output
engine (``llm``), DynamoDB adapters (``storage``) and one package per system."""
